"""Instrument profiles: every physical parameter that differs between units or models of an
instrument, as data with units and sources. The model lives here (:mod:`.parameter`,
:mod:`.profile`); the built-in published profile and reading profile files in
:mod:`labtools.simulators.published`; the instruments a seed draws in
:mod:`labtools.simulators.stand_in`."""

from labtools.simulators.profile.parameter import Parameter, Prior, ProfileError
from labtools.simulators.profile.profile import Profile

__all__ = ["Parameter", "Prior", "Profile", "ProfileError"]
