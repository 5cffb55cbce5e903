"""Reading stock labels such as ``"tartrazine 500 µM ±1 %"``: name, concentration, tolerance."""

from __future__ import annotations

import re

from labtools.errors import ToolError

_LABEL = re.compile(
    r"(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>nM|µM|uM|mM|M)\b(?:\s*±\s*(?P<tol>\d+(?:\.\d+)?)\s*%)?"
)
_SCALE_UM = {"nM": 1e-3, "µM": 1.0, "uM": 1.0, "mM": 1e3, "M": 1e6}


def label_micromolar(label: str) -> float:
    """The concentration (µM) a label states."""
    match = _LABEL.search(label)
    if match is None:
        raise ToolError.of("unknown_resource", f"no concentration on the label {label!r}")
    return float(match["value"]) * _SCALE_UM[match["unit"]]


def label_tolerance(label: str) -> float:
    """The relative tolerance a label states (``±1 %`` → 0.01; 0 if none)."""
    match = _LABEL.search(label)
    return float(match["tol"]) / 100.0 if match is not None and match["tol"] else 0.0
