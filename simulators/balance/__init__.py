"""The simulated balance: an MT-SICS emulator weighing the world's weighing vessel."""

from labtools.simulators.balance.emulator import SICSEmulator, Vessel
from labtools.simulators.balance.virtual import virtual_balance

__all__ = ["SICSEmulator", "Vessel", "virtual_balance"]
