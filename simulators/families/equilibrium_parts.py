"""The ``equilibrium`` family's parts: the indicators (the library's two-form species whose
forms the plate reader tells apart), the buffer sets on the deck, the screens (a pH-independent
dye in the indicator's stock absorbing where one form does), the levels and the labels."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping

import numpy as np

from labtools.session import Budget
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.levels import Level
from labtools.simulators.families.parts import (
    EPSILON_MIN,
    PEAK_NM,
    analyte,
)
from labtools.simulators.families.quantify import ALIKE_MAX, OVERLAP_MIN
from labtools.simulators.world import SpeciesLibrary

__all__ = [
    "BUFFERS",
    "BUFFER_COLUMNS",
    "BUFFER_PH_SD",
    "BUFFER_SETS",
    "HELD_OUT_COMBINATIONS",
    "HELD_OUT_INDICATORS",
    "INDICATOR",
    "INDICATORS",
    "LEVEL",
    "PKA_SPREAD",
    "PKA_TRUNCATE",
    "PROCESS_WEIGHT",
    "PURE_UNITS",
    "SCALE",
    "Indicator",
    "buffer_label",
    "buffers_fit",
    "indicator",
    "indicators",
    "overlapped_form",
    "real_buffer_ph",
    "screens_of",
    "spacing",
    "stock_label",
]

#: the indicator's stock (the screen, where the structure names one, is in it)
INDICATOR = "reservoir:A2"
#: the buffers' columns, in the order of a set's buffers (most acidic first)
BUFFER_COLUMNS = tuple(f"reservoir:A{i}" for i in range(3, 11))
#: the library's pH 2-11 series (one buffer per pH unit, 100 mM) and how each is labelled
BUFFERS = {
    2: ("buffer_ph2", "glycine-HCl"),
    3: ("buffer_ph3", "citrate"),
    4: ("buffer_ph4", "acetate"),
    5: ("buffer_ph5", "acetate"),
    6: ("buffer_ph6", "MES"),
    7: ("buffer_ph7", "phosphate"),
    8: ("buffer_ph8", "Tris-HCl"),
    9: ("buffer_ph9", "borate"),
    10: ("buffer_ph10", "carbonate"),
    11: ("buffer_ph11", "CAPS"),
}
#: which buffers a structure puts on the deck, by name [A: eight one unit apart fill the
#: reservoir's free columns; five two units apart leave the transition one or two buffers]
BUFFER_SETS: dict[str, tuple[int, ...]] = {
    "ph2-9": tuple(range(2, 10)),
    "ph3-10": tuple(range(3, 11)),
    "ph4-11": tuple(range(4, 12)),
    "ph2-10by2": (2, 4, 6, 8, 10),
    "ph3-11by2": (3, 5, 7, 9, 11),
}
#: a buffer's real pH off its label (1 sd) [A: as indicator_pka's buffers (BufferPhErrors):
#: the usual tolerance of a prepared laboratory buffer checked on a calibrated meter]
BUFFER_PH_SD = 0.02
#: the apparent pKa in these buffers off the library's value (1 sd) [A, from the spread of one
#: indicator's published values: bromophenol blue 3.9-4.1 [L], phenol red 7.67 at I = 0.15 M
#: against 8.06 at infinite dilution [V], cresol red ~7.8 in seawater against ~8.2 at low
#: ionic strength [V2/L] (species.toml's sources); ionic strength, medium, temperature and the
#: lot's purity each move it]
PKA_SPREAD = 0.2
#: the drawn shift is kept within this many spreads [A], so that every structure's buffers
#: still hold both pure forms (:data:`PURE_UNITS`)
PKA_TRUNCATE = 2.5
#: a buffer this many pH units beyond the pKa holds ≥ 95 % of the indicator in one form:
#: log10(19) [C]; a *pure form* reading
PURE_UNITS = math.log10(19.0)
#: the score's scale in pH units [A: half indicator_pka's 0.1: buffers labelled ±0.02 let a
#: calibrated two-form fit reach 0.02-0.03, and the published spread (:data:`PKA_SPREAD`)
#: then scores near 0]
SCALE = 0.05
#: the process's share of the outcome, as the other families'
PROCESS_WEIGHT = 0.6
#: held out of training (``test-ood`` only), besides the screens of
#: :data:`~.parts.HELD_OUT_SPECIES` [A: one of the six, whose sibling phenol red (the same
#: chromophore) trains]
HELD_OUT_INDICATORS = frozenset({"cresol_red"})
#: (screen class, buffer spacing) never combined in training [A: each seen, never together]
HELD_OUT_COMBINATIONS = frozenset({("fluorophore", "sparse")})

#: each level's physics and budget. ``od``: the stock's optical density neat in a 200 µL well
#: at its stronger form's peak (library ε, nominal path) [A: level 1's is diluted about 4-12
#: fold into the buffers; level 5's, half stock and half buffer in a 300 µL well, reads its
#: stronger form at 0.07-0.26 OD, 25-85 times the level's tripled 0.003 OD noise floor];
#: ``interferent_ratio``, ``noise``: as the shared levels' (a screen's optical density at the
#: peak of the form it overlaps most, over that form's); the budget: three survey wells and two
#: blanks beside the buffers in triplicate fit in the wells (six of eight buffers at level 5)
#: [A]
LEVEL = {
    1: Level(
        1,
        (3.0, 10.0),
        SHARED_LEVEL[1].interferent_ratio,
        SHARED_LEVEL[1].noise,
        Budget(calls=150, tips=96, reagent_ul=12_000, wells=96),
    ),
    2: Level(
        2,
        (1.5, 5.0),
        SHARED_LEVEL[2].interferent_ratio,
        SHARED_LEVEL[2].noise,
        Budget(calls=120, tips=64, reagent_ul=11_000, wells=72),
    ),
    3: Level(
        3,
        (0.6, 2.0),
        SHARED_LEVEL[3].interferent_ratio,
        SHARED_LEVEL[3].noise,
        Budget(calls=100, tips=48, reagent_ul=10_000, wells=48),
    ),
    4: Level(
        4,
        (0.25, 0.8),
        SHARED_LEVEL[4].interferent_ratio,
        SHARED_LEVEL[4].noise,
        Budget(calls=80, tips=32, reagent_ul=10_000, wells=32),
    ),
    5: Level(
        5,
        (0.1, 0.35),
        SHARED_LEVEL[5].interferent_ratio,
        SHARED_LEVEL[5].noise,
        Budget(calls=60, tips=24, reagent_ul=10_000, wells=24),
    ),
}


# -- the parts ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Indicator:
    """What the package says of an indicator: the library's figures (a published reference)."""

    key: str
    name: str
    pka: float
    #: each form's band maximum within :data:`~.parts.PEAK_NM` (nm) and ε there (M⁻¹ cm⁻¹)
    peak_nm: Mapping[str, float]
    epsilon: Mapping[str, float]

    @property
    def strong(self) -> str:
        """The form that absorbs most (at its own peak)."""
        return max(self.epsilon, key=lambda f: self.epsilon[f])


def _grid() -> np.ndarray:
    return np.arange(PEAK_NM[0], PEAK_NM[1] + 0.5, 1.0)


@functools.cache
def indicator(key: str) -> Indicator:
    """The library's figures of ``key``, checked against the indicator criteria: two forms,
    each absorbing at least :data:`~.parts.EPSILON_MIN` within :data:`~.parts.PEAK_NM`, their
    spectra told apart (at most :data:`~.quantify.ALIKE_MAX` alike)."""
    species = SpeciesLibrary.default()[key]
    if set(species.forms) != {"acid", "base"} or species.pka is None:
        raise ValueError(f"{key} is not a two-form indicator")
    grid = _grid()
    spectra = {f: species.forms[f].absorptivity(grid) for f in ("acid", "base")}
    peak = {f: float(grid[int(np.argmax(s))]) for f, s in spectra.items()}
    epsilon = {f: float(s.max()) for f, s in spectra.items()}
    if min(epsilon.values()) < EPSILON_MIN:
        raise ValueError(f"{key}: a form absorbs below ε {EPSILON_MIN:g} in the reader's band")
    if _cosine(spectra["acid"], spectra["base"]) > ALIKE_MAX:
        raise ValueError(f"{key}: its two forms are too alike to tell apart")
    return Indicator(key, species.name, float(species.pka), peak, epsilon)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / math.sqrt(float(a @ a) * float(b @ b)))


def _is_indicator(key: str) -> bool:
    try:
        indicator(key)
    except ValueError:
        return False
    return True


@functools.cache
def indicators() -> tuple[str, ...]:
    """The library's indicators that :func:`indicator` admits, in library order."""
    library = SpeciesLibrary.default()
    return tuple(k for k in library if library[k].kind == "indicator" and _is_indicator(k))


#: the indicators, in a fixed order (instance names depend on it) [A: every two-form species of
#: the library that the criteria admit]
INDICATORS = (
    "bromophenol_blue",
    "bromothymol_blue",
    "p_nitrophenol",
    "phenol_red",
    "cresol_red",
    "pyranine",
)


def overlapped_form(indicator_key: str, screen: str) -> tuple[str, float]:
    """The form of ``indicator_key`` at whose peak ``screen`` absorbs most, relative to its own
    peak, and that share (0-1)."""
    ind = indicator(indicator_key)
    species = SpeciesLibrary.default()[screen]
    peak = analyte(screen).epsilon
    shares = {f: float(species.absorptivity(ind.peak_nm[f])) / peak for f in ("acid", "base")}
    form = max(shares, key=lambda f: shares[f])
    return form, shares[form]


def screens_of(indicator_key: str) -> list[str]:
    """The analytes that screen ``indicator_key``: absorbing at least :data:`~.quantify.
    OVERLAP_MIN` of their peak at one form's, and told apart from both forms."""
    from labtools.simulators.families.parts import ANALYTES

    library = SpeciesLibrary.default()
    grid = np.arange(PEAK_NM[0], PEAK_NM[1] + 0.5, 2.0)
    forms = [library[indicator_key].forms[f].absorptivity(grid) for f in ("acid", "base")]
    out = []
    for key in ANALYTES:
        spectrum = np.asarray(library[key].absorptivity(grid), dtype=float)
        if overlapped_form(indicator_key, key)[1] < OVERLAP_MIN:
            continue
        if all(_cosine(spectrum, form) <= ALIKE_MAX for form in forms):
            out.append(key)
    return out


def buffers_fit(indicator_key: str, buffers: str) -> bool:
    """Whether the buffer set ``buffers`` holds a buffer :data:`PURE_UNITS` below and one above
    every pKa the indicator may have (its library value ± :data:`PKA_TRUNCATE` spreads)."""
    margin = PURE_UNITS + PKA_TRUNCATE * PKA_SPREAD
    pka = indicator(indicator_key).pka
    phs = BUFFER_SETS[buffers]
    return min(phs) <= pka - margin and max(phs) >= pka + margin


def spacing(buffers: str) -> str:
    """``"sparse"`` for a set two units apart, else ``"full"``."""
    phs = BUFFER_SETS[buffers]
    return "sparse" if phs[1] - phs[0] > 1 else "full"


def buffer_label(ph: int) -> str:
    """A buffer's label, as ``indicator_pka``'s lab labels its buffers."""
    return f"buffer pH {ph:.2f} ±{BUFFER_PH_SD:.2f} ({BUFFERS[ph][1]}, 100 mM)"


def stock_label(indicator_key: str, screen: str | None) -> str:
    """The stock's label: what it holds, not how much."""
    text = f"{indicator(indicator_key).name} stock in water"
    if screen is not None:
        text += f", screened with {analyte(screen).name}"
    return text + " (concentration not stated)"


# -- the rubric --------------------------------------------------------------------------------


def real_buffer_ph(label_ph: float) -> Callable[[np.random.Generator], float]:
    """The draw of a buffer's real pH: its label off by :data:`BUFFER_PH_SD` (1 sd), for the
    world's ``hidden`` stream."""
    return lambda rng: float(label_ph + BUFFER_PH_SD * rng.standard_normal())
