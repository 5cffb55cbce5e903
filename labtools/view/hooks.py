"""What the live view asks of a lab's parts, by duck typing (the core imports no plug-in).

An instrument that has a deck (a liquid handler) draws it with :class:`DrawsDeck`; a shared
object that knows what containers really hold (the simulated world's deck) colours them with
:class:`ColoursWells`. A lab without either still shows its state, calls and clock.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["ColoursWells", "DrawsDeck"]


@runtime_checkable
class DrawsDeck(Protocol):
    def deck_drawing(self) -> dict[str, Any]:
        """``{"layout", "volumes", "tips_used"}``: ``layout`` is ``{"size": [x, y], "boxes",
        "wells", "tips"}`` in mm (the same object while nothing moved), ``volumes`` the
        believed µL of each well holding any, ``tips_used`` the spots believed empty."""
        ...


@runtime_checkable
class ColoursWells(Protocol):
    def well_colours(self) -> dict[str, str]:
        """Container key (``"plate_1:A1"``) → ``"#rrggbb"``, for the containers holding liquid."""
        ...
