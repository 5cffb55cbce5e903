"""Species whose properties are hidden truth drawn per seed: a mystery pH indicator, and the
real pH of prepared buffers.

Both are shared components of a lab configuration, listed after the world and before the deck
(whose volume trackers must see the indicator's stock). When built, and again after every
``world.reset``, they draw their truth through ``world.hidden`` and put the species into the
world's own library (``SpeciesLibrary.put``); the plate reader's ε cache notices replaced
entries, so a rewound lab reads exactly as a newly built one.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from labtools.simulators.world.mixture import Mixture
from labtools.simulators.world.species import Band, Species, SpeciesLibrary
from labtools.simulators.world.world import World

__all__ = [
    "BufferPhErrors",
    "MysteryIndicator",
    "draw_indicator",
    "indicator_species",
    "isosbestic_nm",
]

#: prior of the mystery indicator [A], spanning the indicators of physics reference §8:
#: pKa uniform over most of the useful range (methyl orange ~3.5 … phenol red ~8)
PKA_RANGE = (3.5, 9.0)
#: the short-wavelength band: centre (nm), ε at λmax (M⁻¹ cm⁻¹, log-uniform), FWHM (cm⁻¹);
#: broad, as the acid forms of sulfonephthaleins (~430–440 nm, ε ~1.6–2×10⁴)
SHORT_NM = (400.0, 470.0)
SHORT_EPSILON = (1.2e4, 3.5e4)
SHORT_FWHM_CM1 = (3500.0, 5000.0)
#: the long-wavelength band lies 80–170 nm further (at most 640 nm), stronger and narrower,
#: with a vibronic shoulder on its blue side (bromophenol blue's base form: 591 nm, 6–8×10⁴)
LONG_SHIFT_NM = (80.0, 170.0)
LONG_MAX_NM = 640.0
LONG_EPSILON = (2.5e4, 8.0e4)
LONG_FWHM_CM1 = (1800.0, 3000.0)
SHOULDER_WEIGHT = (0.0, 0.3)
SHOULDER_SHIFT_CM1 = 1350.0  # bromophenol blue: 594 → 550 nm
SHOULDER_WIDENING = 1.25
#: the base form is the long-wavelength one (sulfonephthaleins) with this probability; else
#: the acid form is (azo indicators: methyl orange, methyl red)
BASE_IS_LONG = 0.75
#: an isosbestic point must absorb at least this fraction of the weaker form's peak
ISOSBESTIC_MIN = 0.05
MOLAR_MASS = 500.0  # [A] not observable here
_GRID_NM = np.arange(350.0, 750.5, 0.5)


def draw_indicator(rng: np.random.Generator) -> dict[str, float]:
    """A mystery indicator's hidden parameters: ``pka``, and for each form (``acid_``,
    ``base_``) its band centre ``nm``, ``epsilon`` at λmax (M⁻¹ cm⁻¹), ``fwhm_cm1`` and
    ``shoulder`` weight. Drawn again until the two spectra cross once between their peaks."""
    pka = float(rng.uniform(*PKA_RANGE))
    while True:
        short_nm = float(rng.uniform(*SHORT_NM))
        high = min(short_nm + LONG_SHIFT_NM[1], LONG_MAX_NM)
        long_nm = float(rng.uniform(short_nm + LONG_SHIFT_NM[0], high))
        short = {
            "nm": short_nm,
            "epsilon": _log_uniform(rng, SHORT_EPSILON),
            "fwhm_cm1": float(rng.uniform(*SHORT_FWHM_CM1)),
            "shoulder": 0.0,
        }
        long = {
            "nm": long_nm,
            "epsilon": _log_uniform(rng, LONG_EPSILON),
            "fwhm_cm1": float(rng.uniform(*LONG_FWHM_CM1)),
            "shoulder": float(rng.uniform(*SHOULDER_WEIGHT)),
        }
        acid, base = (short, long) if rng.random() < BASE_IS_LONG else (long, short)
        truth = {"pka": pka}
        truth.update({f"acid_{k}": v for k, v in acid.items()})
        truth.update({f"base_{k}": v for k, v in base.items()})
        if isosbestic_nm(indicator_species("check", "check", truth)) is not None:
            return truth


def indicator_species(key: str, name: str, truth: dict[str, float]) -> Species:
    """The two-form indicator species of :func:`draw_indicator`'s parameters."""
    entry: dict[str, Any] = {
        "kind": "indicator",
        "name": name,
        "molar_mass": MOLAR_MASS,
        "pka": truth["pka"],
        "form": {form: _form(truth, form) for form in ("acid", "base")},
        "sources": {"all": "[A] drawn per seed (labtools.simulators.world.hidden_species)"},
    }
    return SpeciesLibrary.parse({key: entry})[key]


def isosbestic_nm(species: Species) -> float | None:
    """The wavelength (nm) between the two forms' peaks where their ε are equal, if the
    spectra cross exactly once there at a usable ε; else ``None``."""
    acid, base = species.forms["acid"], species.forms["base"]
    low, high = sorted((acid.lambda_max_nm, base.lambda_max_nm))
    grid = _GRID_NM
    nm = grid[(grid >= low) & (grid <= high)]
    a, b = acid.absorptivity(nm), base.absorptivity(nm)
    d = a - b
    crossings = np.flatnonzero(np.sign(d[:-1]) != np.sign(d[1:]))
    if crossings.size != 1:
        return None
    i = int(crossings[0])
    at = float(nm[i] + (nm[i + 1] - nm[i]) * d[i] / (d[i] - d[i + 1]))
    weaker = min(acid.epsilon, base.epsilon)
    return at if float(acid.absorptivity(np.array([at]))[0]) >= ISOSBESTIC_MIN * weaker else None


class MysteryIndicator:
    """An indicator drawn per seed (hidden truth ``species/<key>``), and its labelled stock.

    ``well``, ``concentration_uM``, ``volume_ul``, ``label``: the stock, whose real
    concentration is the label's off by a hidden 1 % (1 sd) preparation error, as for the
    world's prepared solutions.
    """

    def __init__(
        self,
        world: World,
        *,
        well: str,
        concentration_uM: float,
        volume_ul: float,
        label: str,
        key: str = "indicator_x",
        name: str = "Indicator X",
    ) -> None:
        self.world = world
        self.key = key
        self.name = name
        self.well = well
        self.concentration_uM = float(concentration_uM)
        self.volume_ul = float(volume_ul)
        self.label = label
        self._install()
        world.on_reset(self._install)

    @property
    def truth(self) -> dict[str, float]:
        """The hidden parameters (:func:`draw_indicator`), for trainers and scoring only."""
        return self.world.hidden(f"species/{self.key}", draw_indicator)

    def _install(self) -> None:
        self.world.species.put(indicator_species(self.key, self.name, self.truth))
        factor = self.world.hidden(
            f"stock/{self.well}/{self.key}", lambda rng: float(rng.normal(1.0, 0.01))
        )
        molar = self.concentration_uM * 1e-6 * factor
        self.world.fill(self.well, Mixture.solution(self.volume_ul, {self.key: molar}), self.label)


class BufferPhErrors:
    """Prepared buffers whose real pH is the labelled one plus a hidden error, N(0, sd²) per
    buffer and seed (hidden truth ``species/<key>/ph``: the real pH).

    ``buffers``: species keys whose library pH is the label's value; ``sd``: pH units [A]:
    0.02 is the usual tolerance of a prepared laboratory buffer checked on a calibrated meter.
    """

    def __init__(self, world: World, *, buffers: Iterable[str], sd: float = 0.02) -> None:
        if not (math.isfinite(sd) and sd >= 0):
            raise ValueError(f"sd must be a finite number >= 0, not {sd!r}")
        self.world = world
        self.sd = float(sd)
        self._labelled = {key: world.species[key] for key in buffers}
        self._label_ph: dict[str, float] = {}
        for key, species in self._labelled.items():
            if species.ph is None:
                raise ValueError(f"{key} is not a buffer")
            self._label_ph[key] = species.ph
        self._install()
        world.on_reset(self._install)

    def real_ph(self) -> dict[str, float]:
        """Each buffer's real pH this seed (hidden truth)."""

        def drawn_around(ph: float) -> Callable[[np.random.Generator], float]:
            return lambda rng: float(ph + self.sd * rng.standard_normal())

        return {
            key: self.world.hidden(f"species/{key}/ph", drawn_around(ph))
            for key, ph in self._label_ph.items()
        }

    def _install(self) -> None:
        for key, ph in self.real_ph().items():
            self.world.species.put(dataclasses.replace(self._labelled[key], ph=ph))


def _form(truth: dict[str, float], form: str) -> dict[str, Any]:
    centre, fwhm = truth[f"{form}_nm"], truth[f"{form}_fwhm_cm1"]
    bands = [Band(centre, fwhm, 1.0)]
    if truth[f"{form}_shoulder"] > 0:
        shoulder_nm = 1e7 / (1e7 / centre + SHOULDER_SHIFT_CM1)
        bands.append(Band(shoulder_nm, SHOULDER_WIDENING * fwhm, truth[f"{form}_shoulder"]))
    # λmax is the band sum's maximum, found on the grid ``Form.build`` checks it on
    window = 1e7 / np.linspace(centre - 30.0, centre + 30.0, 1201)
    peak_nm = float(1e7 / window[int(np.argmax(sum(b.shape(window) for b in bands)))])
    return {
        "lambda_max_nm": peak_nm,
        "epsilon": truth[f"{form}_epsilon"],
        "bands": [dataclasses.asdict(b) for b in bands],
    }


def _log_uniform(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    return float(math.exp(rng.uniform(math.log(bounds[0]), math.log(bounds[1]))))
