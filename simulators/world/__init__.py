"""The physical world shared by the virtual instruments."""

from simulators.world.clock import VirtualClock
from simulators.world.mixture import Mixture
from simulators.world.species import Species, SpeciesLibrary
from simulators.world.streams import Streams
from simulators.world.world import World

__all__ = ["Mixture", "Species", "SpeciesLibrary", "Streams", "VirtualClock", "World"]
