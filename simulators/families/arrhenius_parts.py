"""The ``arrhenius`` family's parts: the kinetics family's enzyme–substrate pairs, temperature
windows, levels.

A structure is ``<pair>+<window>``: a pair of :data:`~.kinetics_parts.PAIRS` (imported, not
copied) and a temperature window (:data:`WINDOWS`) over which the apparent activation energy is
defined. Every window holds the reference temperature :data:`REFERENCE_C` and lies within the
reader's incubation range (the room + 4 °C to 50 °C, ``plate_reader.toml``). A level
(:data:`LEVEL`) sets how active the enzyme stock is, the reader's noise and the budget (fewer
wells, fewer hours); every figure on a label follows from the level and the *published* figures
(the pair's spans), never from the seed's truth.
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
from labtools.simulators.world.kinetics_temperature import GAS_CONSTANT, kelvin

__all__ = [
    "HELD_OUT_COMBINATIONS",
    "LEVEL",
    "REFERENCE_C",
    "SATURATION",
    "WINDOWS",
    "boltzmann",
    "held_out",
    "labels",
    "setpoints",
    "structures",
]

#: the temperature the turnover is asked at (°C) [A: 37 °C, the usual physiological reference;
#: inside every window]
REFERENCE_C = 37.0
#: the windows (°C): name → (lowest, highest) [A: within the reader's 29-50 °C; 8, 12 and 12 °C
#: wide; the warmest reaches 45 °C, where the less stable enzymes lose a tenth to a third of
#: their activity over a read]
WINDOWS = {"29to37": (29.0, 37.0), "29to41": (29.0, 41.0), "33to45": (33.0, 45.0)}
#: temperatures measured per window, evenly spaced from end to end [A: four, so that a bent
#: Arrhenius line shows]
SETPOINTS = 4
#: the well's substrate over the published Km [A: ten times: the rate is within 10 % of Vmax at
#: the published Km, the stock soluble for every pair (ONPG 25 mM, 7.6 mg/mL)]
SATURATION = 10.0
#: (pair, window) never combined in training, only in ``test-ood`` [A: both seen in training]
HELD_OUT_COMBINATIONS = frozenset({("beta_gal", "33to45")})


def ea_centre(p: Pair) -> float:
    """The centre of the published Ea span (J/mol)."""
    low, high = temperature_prior(p).kcat_ea_kj
    return 500.0 * (low + high)


def boltzmann(ea: float, celsius: float, anchor_c: float) -> float:
    """exp(−Ea/R·(1/T − 1/T_anchor)) (``ea`` in J/mol)."""
    return math.exp(-ea / GAS_CONSTANT * (1.0 / kelvin(celsius) - 1.0 / kelvin(anchor_c)))


def setpoints(window: str) -> list[float]:
    """The window's :data:`SETPOINTS` temperatures (°C), evenly spaced, to 0.01 °C."""
    low, high = WINDOWS[window]
    return [round(low + (high - low) * k / (SETPOINTS - 1), 2) for k in range(SETPOINTS)]


def held_out(structure: str) -> bool:
    """Whether ``structure`` is for ``test-ood`` only: its pair's product is one of
    :data:`~.parts.HELD_OUT_SPECIES`, or (pair, window) is in :data:`HELD_OUT_COMBINATIONS`."""
    key, window = structure.split("+")
    return pair(key).product in HELD_OUT_SPECIES or (key, window) in HELD_OUT_COMBINATIONS


@functools.cache
def structures() -> tuple[str, ...]:
    """Window by window, pair by pair (consecutive training structures span the pairs)."""
    return tuple(f"{p}+{w}" for w in WINDOWS for p in PAIRS)


#: each level, as the kinetics family's levels (:class:`~.kinetics_parts.KineticsLevel`; no
#: coloured preparation) [A]: ``activity`` the OD per minute at 25 °C in a well holding
#: :data:`~.kinetics_parts.ENZYME_MAX_UL` of the enzyme stock at the published kcat (level 1's
#: stock is diluted; level 5's gives 0.006 OD/min at 25 °C at its most, about twice that at
#: 37 °C: 0.2 OD over a read at published constants, sixty times the tripled noise floor);
#: ``top`` the well's substrate over the published Km, :data:`SATURATION` at every level; the
#: wells hold the expert's four temperatures in triplicate with its controls down to level 3
#: (19 wells), in duplicate at levels 4-5 (15 wells); the hours hold four temperatures of about
#: 50 minutes each
LEVEL = {
    n: KineticsLevel(n, activity, SATURATION, (0.0, 0.0), SHARED_LEVEL[n].noise, budget)
    for n, activity, budget in (
        (1, 0.3, Budget(150, 96, 12_000, 96, 6.0)),
        (2, 0.15, Budget(120, 64, 10_000, 48, 6.0)),
        (3, 0.06, Budget(100, 48, 9000, 32, 5.0)),
        (4, 0.02, Budget(80, 32, 8000, 24, 5.0)),
        (5, 0.006, Budget(70, 24, 7000, 16, 5.0)),
    )
}


def labels(p: Pair, level: KineticsLevel) -> dict[str, float]:
    """The stocks' labelled concentrations (M), as the kinetics family's
    (:func:`~.kinetics_parts.labels`): the substrate at :data:`SATURATION` × the published Km in
    a well, the enzyme for the level's activity, the product standard about 1 OD at its top."""
    return kinetics_labels(p, level)
