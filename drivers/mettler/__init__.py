"""Mettler Toledo balances over MT-SICS (the Standard Interface Command Set, levels 0 and 1),
written from the published reference manuals: facade → models → commands → framing →
transport."""

from labtools.drivers.mettler.balance import SICSBalance
from labtools.drivers.mettler.commands import ALL_COMMANDS, Command
from labtools.drivers.mettler.models import MODELS, BalanceModel, get_model
from labtools.drivers.mettler.protocol import Response, parse

__all__ = [
    "ALL_COMMANDS",
    "MODELS",
    "BalanceModel",
    "Command",
    "Response",
    "SICSBalance",
    "get_model",
    "parse",
]
