"""PyLabRobot's exceptions mapped onto labtools' closed set of error codes.

The adapter checks every call before PLR sees it, so these mappings are the safety net for what
slips through (a real backend's hardware error, a race with another PLR user). PLR raises the
same classes for well-side and tip-side problems; only the message (the tracker's ``thing``)
tells them apart, and this mapping does not try to: either side is an ``interlock``.
"""

from __future__ import annotations

from labtools.drivers.pylabrobot.plr import (
    ChannelizedError,
    ChannelsDoNotFitError,
    HasTipError,
    NoChannelError,
    NoTipError,
    ResourceNotFoundError,
    TooLittleLiquidError,
    TooLittleVolumeError,
)
from labtools.errors import (
    InstrumentError,
    Interlock,
    InvalidArguments,
    PreconditionFailed,
    ToolError,
    UnknownResource,
)

__all__ = ["tool_error"]


def tool_error(exc: BaseException, action: str) -> ToolError:
    """The tool error for an exception PLR (or its backend) raised during ``action``."""
    if isinstance(exc, ToolError):
        return exc
    text = f"{action} failed: {exc}"
    if isinstance(exc, ChannelizedError):
        return _channelized(exc, action)
    if isinstance(exc, NoTipError):
        if "spot" in str(exc).lower():
            return Interlock(text, hint="the tip spot is empty; use lh_get_deck for tips left")
        return PreconditionFailed(text, hint="pick up a tip first (lh_pick_up_tips)")
    if isinstance(exc, HasTipError):
        return PreconditionFailed(text, hint="drop the mounted tip first (lh_drop_tips)")
    if isinstance(exc, TooLittleLiquidError | TooLittleVolumeError):
        return Interlock(text, hint="check volumes with lh_get_deck")
    if isinstance(exc, ResourceNotFoundError | KeyError):
        return UnknownResource(text, hint="see lh_get_deck for what exists")
    if isinstance(exc, AssertionError | ChannelsDoNotFitError | NoChannelError):
        return InvalidArguments(text)
    return InstrumentError(f"{action} failed: {type(exc).__name__}: {exc}")


def _channelized(exc: ChannelizedError, action: str) -> ToolError:
    """One error for a per-channel failure: the first channel's, naming all failed channels."""
    if not exc.errors:
        return InstrumentError(f"{action} failed on the instrument: {exc}")
    channels = sorted(exc.errors)
    inner = tool_error(exc.errors[channels[0]], action)
    listed = ", ".join(map(str, channels))
    return type(inner)(f"{inner.message} (channels {listed})", field=inner.field, hint=inner.hint)
