"""The virtual lab's balance: the real MT-SICS driver wired to an in-process emulator.

In a lab configuration::

    [instruments.balance]
    class = "labtools.simulators.balance:virtual_balance"
    world = "@world"
    model = "XPR205"            # optional
"""

from __future__ import annotations

from labtools.drivers.mettler import SICSBalance
from labtools.simulators.balance.emulator import SICSEmulator, Vessel
from labtools.simulators.world import World
from labtools.transport import InProcessTransport

__all__ = ["virtual_balance"]


def virtual_balance(
    name: str,
    world: World,
    model: str = "XPR205",
    *,
    container: str = "weighing_vessel",
) -> SICSBalance:
    """A :class:`SICSBalance` named ``name`` talking MT-SICS to an emulated ``model`` that
    weighs ``container`` of ``world`` (noise from ``world.stream(name)``)."""
    emulator = SICSEmulator(world, model, name=name, vessel=Vessel(container))
    transport = InProcessTransport(emulator, label=f"{name}:emulator")
    balance = SICSBalance(name, transport, model)
    balance.simulated = True
    return balance
