"""The physical world shared by the virtual instruments."""

from labtools.simulators.world.clock import VirtualClock
from labtools.simulators.world.mixture import Mixture
from labtools.simulators.world.species import Species, SpeciesLibrary
from labtools.simulators.world.streams import Streams
from labtools.simulators.world.world import World

__all__ = ["Mixture", "Species", "SpeciesLibrary", "Streams", "VirtualClock", "World"]
