"""The ``kinetics`` family's parts: enzyme–substrate pairs, coloured absorbers, levels.

A *pair* (:data:`PAIRS`, ``kinetics.toml``'s ``[assay.*]``) is a hydrolase, its colourless
substrate and the product the plate reader reads, with the assay's buffer, the read wavelength
and the published spans a seed's truth is drawn from. An *absorber* (:func:`absorbers`) is an
analyte that absorbs at a pair's read wavelength: a coloured enzyme preparation holds it. A
level (:data:`LEVEL`) sets how active the enzyme stock is, how far above the published Km the
substrate stock reaches, how strongly the preparation is coloured, the reader's noise and the
budget; every figure on a label follows from the level and the *published* figures, never from
the seed's truth.
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from importlib import resources

from labtools.session import Budget
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, analyte
from labtools.simulators.tasks.scripting import nominal_path_cm
from labtools.simulators.world import SpeciesLibrary
from labtools.simulators.world.kinetics import KineticsData
from labtools.simulators.world.kinetics_temperature import TemperaturePrior

__all__ = [
    "ABSORBER_MIN",
    "ENZYME_MAX_UL",
    "HELD_OUT_COMBINATIONS",
    "LEVEL",
    "PAIRS",
    "STANDARD_UL",
    "SUBSTRATE_MAX_UL",
    "WELL_UL",
    "KineticsLevel",
    "Pair",
    "absorbers",
    "molar_label",
    "pair",
    "parse",
    "temperature_prior",
]

#: a reaction well's volume (µL), and the most of the enzyme and of the substrate stock it
#: holds [A: the substrate stock at half the well, the enzyme at a quarter, so that buffer is
#: always a quarter or more of it]
WELL_UL, SUBSTRATE_MAX_UL, ENZYME_MAX_UL = 200.0, 100.0, 50.0
#: µL of the product standard in a 200 µL well for each standard level; its label makes the
#: largest read about 1 OD (library ε at the labelled pH, nominal path) [A]
STANDARD_UL = (10.0, 20.0, 40.0)
#: an absorber must absorb at least this share of its own peak at the pair's read wavelength
#: [A: three times quantify's OVERLAP_MIN, a colour at the read wavelength rather than a far
#: tail; malachite green's 420 nm band (0.18-0.21 of its 617 nm peak) is the weakest admitted]
ABSORBER_MIN = 0.15
#: (pair, absorber) never combined in training, only in ``test-ood`` [A: both are seen in
#: training, the combination is not]
HELD_OUT_COMBINATIONS = frozenset({("beta_gal", "tartrazine")})
#: the pairs, in a fixed order (instance names depend on it) [A: every [assay.*] of
#: kinetics.toml]
PAIRS = ("alp", "chymotrypsin", "beta_gal", "ache")


@dataclass(frozen=True)
class Pair:
    """An enzyme assay as ``kinetics.toml``'s ``[assay.<key>]`` states it (published figures;
    Km in M, kcat per site in s⁻¹)."""

    key: str
    enzyme: str
    substrate: str
    product: str
    buffer: str
    read_nm: float
    km: tuple[float, float]
    kcat: tuple[float, float]
    lot_sd: float
    epsilon_sd: float
    pka_sd: float

    @property
    def km_centre(self) -> float:
        """The published Km span's geometric centre (M): the literature's value."""
        return math.sqrt(self.km[0] * self.km[1])

    @property
    def kcat_centre(self) -> float:
        return math.sqrt(self.kcat[0] * self.kcat[1])

    @property
    def ph(self) -> float:
        """The assay buffer's labelled pH."""
        return float(SpeciesLibrary.default()[self.buffer].ph or 7.0)

    @property
    def epsilon(self) -> float:
        """The product's absorptivity at :attr:`read_nm` and the labelled pH, as the library
        gives it (M⁻¹ cm⁻¹)."""
        product = SpeciesLibrary.default()[self.product]
        return float(product.absorptivity(self.read_nm, ph=self.ph))

    @property
    def od_per_molar(self) -> float:
        """OD per M of product in a 200 µL well: library ε, nominal path (no lab's own)."""
        return self.epsilon * nominal_path_cm(WELL_UL)

    def name(self, key: str) -> str:
        """The library's name of ``key`` (one of this pair's species), without its
        parenthesis."""
        return SpeciesLibrary.default()[key].name.split(" (")[0]

    @property
    def ln_spreads(self) -> tuple[float, float]:
        """The package's own spread (sd of ln) of Km and of kcat per labelled site: the spans'
        (log-uniform: width/√12), kcat's with the lot's."""
        km = math.log(self.km[1] / self.km[0]) / math.sqrt(12.0)
        kcat = math.log(self.kcat[1] / self.kcat[0]) / math.sqrt(12.0)
        return km, math.hypot(kcat, self.lot_sd)


@functools.cache
def pair(key: str) -> Pair:
    """``[assay.<key>]`` of ``kinetics.toml``."""
    text = resources.files("labtools.simulators").joinpath("data/kinetics.toml").read_text("utf-8")
    entry = tomllib.loads(text)["assay"][key]
    low, high = (float(x) * 1e-3 for x in entry["km_mM"])
    return Pair(
        key,
        entry["enzyme"],
        entry["substrate"],
        entry["product"],
        entry["buffer"],
        float(entry["read_nm"]),
        (low, high),
        (float(entry["kcat_per_s"][0]), float(entry["kcat_per_s"][1])),
        float(entry["lot_activity_sd"]),
        float(entry["epsilon_sd"]),
        float(entry["pka_sd"]),
    )


def overlap_at(key: str, nm: float) -> float:
    """``key``'s absorbance at ``nm`` relative to its own peak (0-1)."""
    return float(SpeciesLibrary.default()[key].absorptivity(nm)) / analyte(key).epsilon


@functools.cache
def absorbers(pair_key: str) -> tuple[str, ...]:
    """The analytes that colour a preparation at ``pair_key``'s read wavelength: dyes and
    cofactors absorbing at least :data:`ABSORBER_MIN` of their peak there (products left out:
    they would be read as product)."""
    nm = pair(pair_key).read_nm
    return tuple(
        k
        for k in ANALYTES
        if analyte(k).kind in ("dye", "cofactor") and overlap_at(k, nm) >= ABSORBER_MIN
    )


def parse(structure: str) -> tuple[Pair, str | None]:
    """``<pair>[+<absorber>]``: the pair and the absorber colouring its preparation, if any;
    ``ValueError`` for an absorber that does not absorb at the pair's read wavelength."""
    keys = structure.split("+")
    p = pair(keys[0])
    absorber = keys[1] if len(keys) == 2 else None
    if absorber is not None and absorber not in absorbers(p.key):
        raise ValueError(f"{absorber} does not absorb at {p.key}'s read wavelength")
    return p, absorber


def held_out(structure: str) -> bool:
    """Whether ``structure`` is for ``test-ood`` only: it holds a species of
    :data:`~.parts.HELD_OUT_SPECIES` (the product or the absorber), or a combination of
    :data:`HELD_OUT_COMBINATIONS`."""
    keys = structure.split("+")
    p = pair(keys[0])
    if HELD_OUT_SPECIES & {p.product, *keys[1:]}:
        return True
    return len(keys) == 2 and (keys[0], keys[1]) in HELD_OUT_COMBINATIONS


@functools.cache
def structures() -> tuple[str, ...]:
    """Every pair alone, then every pair with each absorber (absorber by absorber, pair by pair,
    so that any run of consecutive training structures spans the pairs)."""
    out = list(PAIRS)
    for absorber in ANALYTES:
        out += [f"{p}+{absorber}" for p in PAIRS if absorber in absorbers(p)]
    return tuple(out)


@dataclass(frozen=True)
class KineticsLevel:
    """One level's physics and budget (the shared levels' ``noise``)."""

    number: int
    #: OD per minute at Vmax in a 200 µL well holding :data:`ENZYME_MAX_UL` of the enzyme stock
    #: (published kcat, library ε, nominal path): how active the stock is
    activity: float
    #: the most substrate a well holds (:data:`SUBSTRATE_MAX_UL` of the stock) over the published
    #: Km: how far above Km the soluble stock reaches
    top: float
    #: a coloured preparation's absorber: its OD at the read wavelength in a well holding
    #: :data:`ENZYME_MAX_UL` of the stock (log-uniform within)
    absorber_od: tuple[float, float]
    noise: float
    budget: Budget


#: each level [A]: level 1's stock turns the substrate over fast enough to be diluted, its
#: substrate reaches 8 × Km and its colour reads 0.05-0.15 OD at most; level 5's stock at its
#: most gives 0.008 OD/min at Vmax (0.3 OD over a 40-minute read at published constants, a
#: hundred times the tripled noise floor), its substrate reaches 2.5 × Km (Km near the top of
#: what the stock allows) and its colour 0.5-1.2 OD. The budgets hold the expert's six substrate
#: levels with their controls in duplicate at level 5 (20 wells of 24), in triplicate from
#: level 4 down (26-28 wells)
LEVEL = {
    1: KineticsLevel(
        1, 0.4, 8.0, (0.05, 0.15), SHARED_LEVEL[1].noise, Budget(150, 96, 12_000, 96, 4.0)
    ),
    2: KineticsLevel(
        2, 0.2, 6.0, (0.1, 0.3), SHARED_LEVEL[2].noise, Budget(120, 64, 10_000, 72, 4.0)
    ),
    3: KineticsLevel(
        3, 0.08, 4.5, (0.2, 0.5), SHARED_LEVEL[3].noise, Budget(100, 48, 9000, 48, 3.0)
    ),
    4: KineticsLevel(
        4, 0.02, 3.5, (0.3, 0.8), SHARED_LEVEL[4].noise, Budget(80, 32, 8000, 32, 3.0)
    ),
    5: KineticsLevel(
        5, 0.008, 2.5, (0.5, 1.2), SHARED_LEVEL[5].noise, Budget(60, 24, 7000, 24, 3.0)
    ),
}


def two_figures(value: float) -> float:
    """``value`` rounded to two significant figures, as a label states it."""
    return float(f"{value:.2g}")


def labels(p: Pair, level: KineticsLevel) -> dict[str, float]:
    """The stocks' labelled concentrations (M) at ``level``: the substrate (the well's most
    at :attr:`~KineticsLevel.top` × the published Km), the enzyme (the level's activity at the
    published kcat) and the product standard (:data:`STANDARD_UL`'s largest about 1 OD)."""
    substrate = level.top * p.km_centre * WELL_UL / SUBSTRATE_MAX_UL
    per_molar = p.od_per_molar * 60.0 * p.kcat_centre * ENZYME_MAX_UL / WELL_UL
    enzyme = level.activity / per_molar
    standard = 1.0 / (p.od_per_molar * STANDARD_UL[-1] / WELL_UL)
    return {
        "substrate": molar_label(substrate),
        "enzyme": molar_label(enzyme),
        "standard": molar_label(standard),
    }


def molar_label(molar: float) -> float:
    """``molar`` to two significant figures in the unit its label will use."""
    for scale in (1e-3, 1e-6, 1e-9):
        if molar >= scale:
            return two_figures(molar / scale) * scale
    return two_figures(molar / 1e-12) * 1e-12


def label_text(molar: float) -> str:
    """A concentration as a label states it (``"2.6 nM"``)."""
    for scale, unit in ((1e-3, "mM"), (1e-6, "µM"), (1e-9, "nM")):
        if molar >= scale * 0.999:
            return f"{molar / scale:.3g} {unit}"
    return f"{molar / 1e-9:.3g} nM"


def temperature_prior(p: Pair) -> TemperaturePrior:
    """The enzyme's temperature laws' published spans (``kinetics.toml``'s
    ``[enzyme.<key>.temperature]``): what the temperature families draw and their shortcuts
    read."""
    found = KineticsData.default().enzymes[p.enzyme].temperature
    if found is None:
        raise KeyError(f"{p.enzyme} has no [enzyme.{p.enzyme}.temperature] table")
    return found
