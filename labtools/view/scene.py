"""What the page draws, read from a lab: its state, decks, well colours, clock and calls.

:class:`Scene` is read on the view server's thread, between or even during the lab's calls:
everything it reads is belief and contents held in Python objects, read without changing them.
A read that meets a container changing under it (``RuntimeError``) is tried again at the next
tick; a state read during a call may show that call half done until the next one.
"""

from __future__ import annotations

import json
import math
from collections import deque
from typing import Any

from labtools.view.hooks import ColoursWells, DrawsDeck

__all__ = ["CALLS_KEPT", "Calls", "Scene", "call_entry", "plate_reading"]

#: calls the view keeps for a page that opens later (the most recent)
CALLS_KEPT = 500
#: characters of a call's arguments or result shown in the log
SHOWN = 240


class Scene:
    """The lab as the page draws it: :meth:`layout` (what sits where, changing only when
    something moves) and :meth:`state` (what is believed and held now)."""

    def __init__(self, lab: Any, calls: Calls | None = None) -> None:
        self.lab = lab
        self.calls = calls
        self._layouts: dict[str, dict[str, Any]] = {}
        self.layout_version = 0

    def read(self) -> tuple[dict[str, Any], bool]:
        """The state now, and whether the layout changed since the last read."""
        lab = self.lab
        decks: dict[str, Any] = {}
        moved = False
        for name, instrument in lab.instruments.items():
            if isinstance(instrument, DrawsDeck):
                drawing = instrument.deck_drawing()
                layout = drawing["layout"]
                if self._layouts.get(name) is not layout:
                    self._layouts[name] = layout
                    moved = True
                decks[name] = {"volumes": drawing["volumes"], "tips_used": drawing["tips_used"]}
        if moved:
            self.layout_version += 1
        colours: dict[str, str] = {}
        for shared in lab.shared.values():
            if isinstance(shared, ColoursWells):
                colours.update(shared.well_colours())
        state = lab.state()
        clock = state.pop("clock_s", None)
        return {
            "layout_version": self.layout_version,
            "clock_s": clock,
            "decks": decks,
            "colours": colours,
            "instruments": state,
            "reading": self.calls.latest_reading() if self.calls is not None else None,
        }, moved

    def layout(self) -> dict[str, Any]:
        """Every deck's layout as last read, with its version."""
        return {"layout_version": self.layout_version, "decks": dict(self._layouts)}


class Calls:
    """The calls a lab made while watched: each journal event as it comes (cheap: kept as
    given), worded for the page when read. Thread-safe for one writer and one reader."""

    def __init__(self, kept: int = CALLS_KEPT) -> None:
        self._events: deque[tuple[int, dict[str, Any]]] = deque(maxlen=kept)
        self._reading: tuple[int, dict[str, Any]] | None = None
        self.count = 0

    def __call__(self, event: dict[str, Any]) -> None:
        """The lab's watcher: one journal event (and, if it may be a plate reading, kept as
        the latest one: one look at its data, not a scan of the calls at each read)."""
        self.count += 1
        self._events.append((self.count, event))
        data = event.get("data")
        if type(data) is dict and "values" in data:
            self._reading = (self.count, event)

    def since(self, seen: int, limit: int = CALLS_KEPT) -> list[dict[str, Any]]:
        """Entries of the calls after the ``seen``-th, oldest first: the most recent ``limit``
        of them, of those still kept (a gap in their numbers ``n`` says calls were left out)."""
        first = max(seen, self.count - limit)
        if first >= self.count:
            return []
        return [call_entry(n, event) for n, event in list(self._events) if n > first]

    def latest_reading(self) -> dict[str, Any] | None:
        """The most recent call that may be a plate reading, as :func:`plate_reading` words it
        (``None`` if it is not one after all)."""
        reading = self._reading
        return plate_reading(*reading) if reading is not None else None


def plate_reading(n: int, event: dict[str, Any]) -> dict[str, Any] | None:
    """A call's plate reading as the page's heatmap takes it, or ``None``: a result naming a
    ``plate`` with ``values`` per well (numbers), and the wells listed as ``saturated`` or
    ``over_range`` (read, but no number given)."""
    data = event.get("data") if event.get("ok") else None
    if not isinstance(data, dict) or not isinstance(data.get("plate"), str):
        return None
    values = data.get("values")
    if not isinstance(values, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in values.values()
    ):
        return None
    wavelength = data.get("wavelength")
    return {
        "n": n,
        "tool": str(event.get("tool")),
        "plate": data["plate"],
        "unit": str(data.get("unit", "")),
        "wavelength_nm": _number(wavelength.get("value"))
        if isinstance(wavelength, dict) and wavelength.get("unit") == "nanometer"
        else None,
        "values": {str(k): _number(v) for k, v in values.items()},
        "saturated": [str(w) for w in data.get("saturated") or []],
        "over_range": [str(w) for w in data.get("over_range") or []],
    }


def call_entry(n: int, event: dict[str, Any]) -> dict[str, Any]:
    """One call as the log shows it: tool, arguments and result in short, or the refusal's
    code, message, field and hint (``shadow`` when the shadow twin refused it)."""
    entry: dict[str, Any] = {
        "n": n,
        "seq": event.get("seq"),
        "tool": str(event.get("tool")),
        "arguments": _short(event.get("arguments")),
        "ok": bool(event.get("ok")),
        "virtual_time_s": _number(event.get("virtual_time_s")),
        "virtual_s": _number(event.get("virtual_s")),
    }
    if entry["ok"]:
        entry["result"] = _short(event.get("data"))
    else:
        error = event.get("error") or {}
        entry["error"] = {
            key: str(error[key])
            for key in ("code", "message", "field", "hint")
            if error.get(key) is not None
        }
        entry["shadow"] = bool(error.get("shadow"))
    return entry


def _short(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None
