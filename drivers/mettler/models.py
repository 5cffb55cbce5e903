"""Mettler Toledo balance models as data: one frozen record per model, figures with their sources.

Evidence tags as in the project's physics reference: [V] confirmed in the named source, [L]
recalled datasheet value, [A] assumption, [C] computed.

The driver needs only what the balance does not report itself: how finely it reads (to round
and to state the resolution of a result) and how long a stable reading may take. Type and
capacity come from the balance (``I2``) when it connects; the figures here are the fallback
and what the emulator builds its balance from (with the repeatability and settling time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MODELS", "BalanceModel", "get_model"]


@dataclass(frozen=True)
class BalanceModel:
    """What a driver and an emulator know about one balance model (grams and seconds)."""

    name: str
    #: largest load (g)
    capacity_g: float
    #: the display's smallest step (g): 1e-5 g is 0.01 mg
    readability_g: float
    #: repeatability, one standard deviation of repeated readings of one load (g)
    repeatability_g: float
    #: time from a change of load to a stable reading (s)
    settling_s: float
    #: how long a stable command waits for stability before answering "not executable" (s)
    stable_timeout_s: float = 20.0
    source: str = ""

    def __post_init__(self) -> None:
        if not 0 < self.readability_g < self.capacity_g:
            raise ValueError(f"{self.name}: readability must be positive and below capacity")
        if self.repeatability_g < 0 or self.settling_s < 0 or self.stable_timeout_s <= 0:
            raise ValueError(f"{self.name}: repeatability, settling and timeout must be >= 0")

    @property
    def decimals(self) -> int:
        """Decimal places of a reading in grams (5 for 0.01 mg)."""
        return max(0, round(-math.log10(self.readability_g)))


MODELS: dict[str, BalanceModel] = {
    model.name: model
    for model in (
        BalanceModel(
            # Mettler Toledo XPR205 analytical balance, 220 g at 0.01 mg; repeatability
            # 0.015 mg (sd, at 10 g) and settling time 1.5 s [L: XPR analytical balance
            # datasheet; not confirmed in a stored source]
            name="XPR205",
            capacity_g=220.0,
            readability_g=1e-5,
            repeatability_g=1.5e-5,
            settling_s=1.5,
            source="XPR205 datasheet [L]: 220 g, d 0.01 mg, repeatability 0.015 mg, 1.5 s",
        ),
        BalanceModel(
            # Mettler Toledo WXS205SDU weigh module, the balance of Hamilton's liquid
            # verification kit [V: PyLabRobot 0.2.2 mettler_toledo_backend docstring and
            # its scale documentation]; 220 g, fine range 81 g at 0.01 mg, repeatability
            # 0.02 mg, settling 2 s [L: WXS205SDU datasheet; not confirmed]. Modelled in its
            # fine range's readability over the whole range [A].
            name="WXS205SDU",
            capacity_g=220.0,
            readability_g=1e-5,
            repeatability_g=2e-5,
            settling_s=2.0,
            source="WXS205SDU datasheet [L]: 220 g (81 g fine range), d 0.01 mg, 0.02 mg, 2 s",
        ),
    )
}


def get_model(name: str) -> BalanceModel:
    """The model called ``name`` (case-insensitive); ``ValueError`` lists the known ones."""
    model = MODELS.get(name.upper()) if isinstance(name, str) else None
    if model is None:
        raise ValueError(f"unknown balance model {name!r}; known: {', '.join(MODELS)}")
    return model
