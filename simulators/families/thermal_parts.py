"""The ``thermal`` family's parts: the kinetics family's enzyme–substrate pairs, test
temperatures, levels.

A structure is ``<pair>+<celsius>C``: a pair of :data:`~.kinetics_parts.PAIRS` (imported, not
copied) and a test temperature of :data:`TEMPERATURES` at which the pair's enzyme's half-life,
at the *centre* of its published spans (``kinetics.toml``'s ``[enzyme.<key>.temperature]``:
the activity left after 10 minutes at 56 °C and unfolding's activation energy), lies within
:data:`HALF_LIFE_MIN` (:func:`centre_half_life_min`). A level (:data:`LEVEL`) sets how active
the enzyme stock is, the reader's noise and the budget (fewer wells, fewer hours); every figure
on a label follows from the level and the *published* figures, never from the seed's truth.
"""

from __future__ import annotations

import functools
import math

from labtools.session import Budget
from labtools.simulators.families.kinetics_parts import (
    PAIRS,
    KineticsLevel,
    Pair,
    pair,
    temperature_prior,
)
from labtools.simulators.families.kinetics_parts import labels as kinetics_labels
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.parts import HELD_OUT_SPECIES
from labtools.simulators.world.kinetics_temperature import at_temperature

__all__ = [
    "HALF_LIFE_MIN",
    "HELD_OUT_COMBINATIONS",
    "LEVEL",
    "SATURATION",
    "TEMPERATURES",
    "celsius_of",
    "centre_half_life_min",
    "held_out",
    "labels",
    "structures",
]

#: the test temperatures (°C) [A: the top of the reader's incubation range (to 50 °C,
#: ``plate_reader.toml``) in half degrees: below 48 °C the published spans put the half-life of
#: every pair's enzyme past two hours]
TEMPERATURES = (48.0, 48.5, 49.0, 49.5, 50.0)
#: a structure's half-life at the published spans' centres lies within (minutes) [A: from a
#: plate's settling (~20 min) to what a few hours' read sees decay]
HALF_LIFE_MIN = (5.0, 120.0)
#: the well's substrate over the published Km [A: ten times, as the arrhenius family: the rate
#: within 10 % of Vmax at the published Km, the stock soluble for every pair]
SATURATION = 10.0
#: (pair, temperature) never combined in training, only in ``test-ood`` [A: both seen in
#: training]
HELD_OUT_COMBINATIONS = frozenset({("beta_gal", 49.0)})
#: a room-temperature half-life (h) to carry the 56 °C test down with [A: inside
#: ``kinetics.toml``'s 20-200 h span; it moves a half-life of hours at 48-50 °C by < 0.1 %]
ROOM_HALF_LIFE_H = 60.0


def centre_half_life_min(p: Pair, celsius: float) -> float:
    """The enzyme's half-life (min) at ``celsius`` at the centres of its published spans
    (residual after 10 minutes at 56 °C, unfolding's Ea): the package's own figure."""
    spans = temperature_prior(p)
    thermal = {
        "kcat_ea": 1e3 * sum(spans.kcat_ea_kj) / 2.0,
        "km_ratio_37": sum(spans.km_ratio_37) / 2.0,
        "residual_56": sum(spans.residual_56) / 2.0,
        "unfolding_ea": 1e3 * sum(spans.unfolding_ea_kj) / 2.0,
    }
    room = {
        "km_molar": 1.0,
        "kcat_per_s": 1.0,
        "kd_per_s": math.log(2.0) / (ROOM_HALF_LIFE_H * 3600.0),
    }
    kd = at_temperature(room, thermal, celsius)["kd_per_s"]
    return math.log(2.0) / kd / 60.0


def celsius_of(structure: str) -> float:
    """The test temperature of ``structure`` (``"alp+50C"`` → 50.0)."""
    return float(structure.split("+")[1].removesuffix("C"))


def held_out(structure: str) -> bool:
    """Whether ``structure`` is for ``test-ood`` only: its pair's product is one of
    :data:`~.parts.HELD_OUT_SPECIES`, or (pair, temperature) is in
    :data:`HELD_OUT_COMBINATIONS`."""
    key = structure.split("+")[0]
    return (
        pair(key).product in HELD_OUT_SPECIES
        or (key, celsius_of(structure)) in HELD_OUT_COMBINATIONS
    )


@functools.cache
def structures() -> tuple[str, ...]:
    """Temperature by temperature, pair by pair, those whose centre half-life lies within
    :data:`HALF_LIFE_MIN`."""
    low, high = HALF_LIFE_MIN
    return tuple(
        f"{p}+{t:g}C"
        for t in TEMPERATURES
        for p in PAIRS
        if low <= centre_half_life_min(pair(p), t) <= high
    )


#: each level, as the kinetics family's levels (:class:`~.kinetics_parts.KineticsLevel`; no
#: coloured preparation) [A]: ``activity`` the OD per minute at 25 °C in a well holding
#: :data:`~.kinetics_parts.ENZYME_MAX_UL` of the enzyme stock at the published kcat (level 5's
#: gives 0.006 OD/min at 25 °C at its most, about 2.5 times that at 50 °C: ~1 OD before a
#: 50-minute half-life has run out); ``top`` :data:`SATURATION` at every level; the wells hold
#: the expert's replicates with its controls at every level; the hours set how long the read
#: can follow a slow enzyme's decay (6 hours at level 1, 3 at level 5)
LEVEL = {
    n: KineticsLevel(n, activity, SATURATION, (0.0, 0.0), SHARED_LEVEL[n].noise, budget)
    for n, activity, budget in (
        (1, 0.3, Budget(80, 48, 6000, 48, 6.0)),
        (2, 0.15, Budget(70, 40, 5000, 32, 5.0)),
        (3, 0.06, Budget(60, 32, 4000, 24, 4.0)),
        (4, 0.02, Budget(50, 24, 3000, 16, 3.5)),
        (5, 0.006, Budget(40, 16, 2000, 12, 3.0)),
    )
}


def labels(p: Pair, level: KineticsLevel) -> dict[str, float]:
    """The stocks' labelled concentrations (M), as the kinetics family's
    (:func:`~.kinetics_parts.labels`)."""
    return kinetics_labels(p, level)
