"""The species library: molar absorptivity spectra, pKa, fluorescence, with their sources.

Data live in ``simulators/data/species.toml``; every number there carries its evidence tag.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from labtools.simulators.world.kinetics_temperature import REFERENCE_C

__all__ = [
    "LIBRARY_C",
    "Band",
    "Batch",
    "Fluorescence",
    "Form",
    "Species",
    "SpeciesLibrary",
    "Temperature",
]

_LN2x4 = 4.0 * math.log(2.0)
#: the temperature (°C) the library's absorptivities hold at: the kinetic constants' (the room's)
LIBRARY_C = REFERENCE_C


@dataclass(frozen=True)
class Band:
    """A Gaussian absorption band in wavenumber."""

    center_nm: float
    fwhm_cm1: float
    weight: float

    def shape(self, wavenumber_cm1: np.ndarray) -> np.ndarray:
        centre = 1e7 / self.center_nm
        return self.weight * np.exp(-_LN2x4 * ((wavenumber_cm1 - centre) / self.fwhm_cm1) ** 2)


@dataclass(frozen=True)
class Form:
    """One absorbing form of a species: peak ε (M⁻¹ cm⁻¹) at ``lambda_max_nm`` and band shape."""

    lambda_max_nm: float
    epsilon: float
    bands: tuple[Band, ...]
    _scale: float = field(default=1.0, repr=False)

    @classmethod
    def build(cls, raw: dict[str, Any], molar_mass: float, where: str) -> Form:
        if "epsilon" in raw:
            epsilon = float(raw["epsilon"])
        elif "e1pct" in raw:
            epsilon = float(raw["e1pct"]) * molar_mass / 10.0
        else:
            raise ValueError(f"{where}: give epsilon or e1pct")
        bands = tuple(Band(**b) for b in raw["bands"])
        lam = float(raw["lambda_max_nm"])
        # ε is quoted at λmax, which must be a local maximum of the band sum (±3 nm).
        window = 1e7 / np.linspace(lam - 30.0, lam + 30.0, 1201)
        shape = sum(b.shape(window) for b in bands)
        peak_nm = 1e7 / window[int(np.argmax(shape))]
        if abs(peak_nm - lam) > 3.0:
            raise ValueError(f"{where}: bands peak at {peak_nm:.1f} nm, not {lam:g}")
        return cls._scaled(lam, epsilon, bands)

    @classmethod
    def _scaled(cls, lam: float, epsilon: float, bands: tuple[Band, ...]) -> Form:
        """The form whose band sum, scaled, is 1 at ``lam`` (ε is quoted there)."""
        at_peak = float(sum(b.shape(np.array(1e7 / lam)) for b in bands))
        return cls(lam, epsilon, bands, 1.0 / at_peak)

    def varied(self, factor: float, shift_nm: float) -> Form:
        """This form with its ε × ``factor`` and every band ``shift_nm`` (nm) further to the red:
        another batch of the same dye (its peak checked once, in the library's :meth:`build`: a
        batch is drawn for every species of every world)."""
        bands = tuple(dataclasses.replace(b, center_nm=b.center_nm + shift_nm) for b in self.bands)
        return Form._scaled(self.lambda_max_nm + shift_nm, self.epsilon * factor, bands)

    def absorptivity(self, nm: np.ndarray) -> np.ndarray:
        """ε(λ) in M⁻¹ cm⁻¹ at the wavelengths ``nm``."""
        wavenumber = 1e7 / np.asarray(nm, dtype=float)
        shape = np.asarray(sum(b.shape(wavenumber) for b in self.bands), dtype=float)
        return self.epsilon * self._scale * shape


@dataclass(frozen=True)
class Fluorescence:
    excitation_nm: float
    emission_nm: float
    emission_fwhm_cm1: float
    quantum_yield: float

    def emission(self, nm: float) -> float:
        """Relative emission at ``nm`` (1 at the emission maximum)."""
        return float(Band(self.emission_nm, self.emission_fwhm_cm1, 1.0).shape(np.array(1e7 / nm)))


@dataclass(frozen=True)
class Batch:
    """How one batch of a species differs from the library's entry (1 sd): its ε, relatively
    (``epsilon_sd``), and its band positions (``shift_nm_sd``, nm)."""

    epsilon_sd: float = 0.0
    shift_nm_sd: float = 0.0

    def draw(self, rng: np.random.Generator) -> tuple[float, float]:
        """A batch's ε factor and band shift (nm): exp(N(0, epsilon_sd²)), N(0, shift_nm_sd²)."""
        factor = math.exp(self.epsilon_sd * float(rng.standard_normal()))
        return factor, self.shift_nm_sd * float(rng.standard_normal())


@dataclass(frozen=True)
class Temperature:
    """A species' absorptivity against temperature: ``relative`` (ε over ε at
    :data:`LIBRARY_C`) at each of ``celsius`` (ascending), interpolated linearly and extended
    along the end segments."""

    celsius: tuple[float, ...]
    relative: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.celsius) < 2 or len(self.celsius) != len(self.relative):
            raise ValueError("a temperature table needs two or more (celsius, relative) pairs")
        if any(b <= a for a, b in zip(self.celsius, self.celsius[1:], strict=False)):
            raise ValueError("a temperature table's celsius must ascend")

    def factor(self, celsius: float) -> float:
        t, r = self.celsius, self.relative
        i = min(max(int(np.searchsorted(t, celsius)), 1), len(t) - 1)
        return r[i - 1] + (r[i] - r[i - 1]) * (celsius - t[i - 1]) / (t[i] - t[i - 1])


@dataclass(frozen=True)
class Species:
    """A chemical species: forms, optional pKa, fluorescence, luminescence, sources."""

    key: str
    name: str
    kind: str
    molar_mass: float
    forms: dict[str, Form]
    pka: float | None = None
    fluorescence: Fluorescence | None = None
    luminescence: dict[str, float] | None = None
    concentration_molar: float | None = None
    ph: float | None = None
    sources: dict[str, str] = field(default_factory=dict)
    #: batch-to-batch variation (``None``: every batch is the library's entry)
    batch: Batch | None = None
    #: ε relative to its value at :data:`LIBRARY_C`, by temperature (°C); ``None``: constant
    temperature: Temperature | None = None

    def temperature_factor(self, celsius: float) -> float:
        """ε at ``celsius`` over ε at :data:`LIBRARY_C`: 1 without a table."""
        return 1.0 if self.temperature is None else self.temperature.factor(celsius)

    def batch_of(self, factor: float, shift_nm: float) -> Species:
        """One batch of this species: every form's ε × ``factor``, its bands ``shift_nm`` (nm)
        to the red (:meth:`Batch.draw`)."""
        forms = {name: form.varied(factor, shift_nm) for name, form in self.forms.items()}
        return dataclasses.replace(self, forms=forms)

    def base_fraction(self, ph: float) -> float:
        """Fraction in the base form at ``ph`` (1 for species without a pKa)."""
        if self.pka is None:
            return 1.0
        return 1.0 / (1.0 + 10.0 ** (self.pka - ph))

    def absorptivity(self, nm: np.ndarray | float, ph: float = 7.0) -> np.ndarray:
        """Apparent ε(λ) in M⁻¹ cm⁻¹ at ``ph``."""
        nm = np.asarray(nm, dtype=float)
        if "default" in self.forms:
            return self.forms["default"].absorptivity(nm)
        f = self.base_fraction(ph)
        return (1.0 - f) * self.forms["acid"].absorptivity(nm) + f * self.forms[
            "base"
        ].absorptivity(nm)

    @property
    def lambda_max_nm(self) -> float:
        form = self.forms.get("default") or self.forms["base"]
        return form.lambda_max_nm

    @property
    def epsilon_max(self) -> float:
        form = self.forms.get("default") or self.forms["base"]
        return form.epsilon


class SpeciesLibrary:
    """The species of ``simulators/data/species.toml`` by key.

    :meth:`default` is shared by the whole process and cannot change; a world keeps its own
    :meth:`copy`, into which components :meth:`put` species drawn per seed.
    """

    def __init__(self, species: dict[str, Species]) -> None:
        self._species = species
        self._shared = False

    @classmethod
    @cache
    def default(cls) -> SpeciesLibrary:
        text = (
            resources.files("labtools.simulators").joinpath("data/species.toml").read_text("utf-8")
        )
        library = cls.parse(tomllib.loads(text))
        library._shared = True
        return library

    def copy(self) -> SpeciesLibrary:
        """A library of the same species that can change without touching this one."""
        return SpeciesLibrary(dict(self._species))

    def put(self, species: Species) -> None:
        """Add ``species``, or replace the entry with its key. Readers that cache per species
        check the entry they cached from
        (:class:`labtools.simulators.plate_reading.Absorptivity`)."""
        if self._shared:
            raise TypeError("the default species library is shared: put species into a copy()")
        self._species[species.key] = species

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SpeciesLibrary:
        out: dict[str, Species] = {}
        for key, entry in raw.items():
            forms = {
                name: Form.build(form, entry["molar_mass"], f"{key}.{name}")
                for name, form in entry.get("form", {}).items()
            }
            if forms and set(forms) not in ({"default"}, {"acid", "base"}):
                raise ValueError(f"{key}: forms must be 'default' or 'acid' and 'base'")
            if "acid" in forms and entry.get("pka") is None:
                raise ValueError(f"{key}: an indicator needs a pka")
            fluor = entry.get("fluorescence")
            out[key] = Species(
                key=key,
                name=entry["name"],
                kind=entry["kind"],
                molar_mass=float(entry["molar_mass"]),
                forms=forms,
                pka=entry.get("pka"),
                fluorescence=Fluorescence(**fluor) if fluor else None,
                luminescence=entry.get("luminescence"),
                concentration_molar=entry.get("concentration_molar"),
                ph=entry.get("ph"),
                sources=dict(entry.get("sources", {})),
                batch=Batch(**entry["batch"]) if "batch" in entry else None,
                temperature=_temperature(entry.get("temperature")),
            )
        return cls(out)

    def __getitem__(self, key: str) -> Species:
        return self._species[key]

    def __contains__(self, key: object) -> bool:
        return key in self._species

    def __iter__(self) -> Iterator[str]:
        return iter(self._species)

    def keys(self) -> list[str]:
        return list(self._species)


def _temperature(raw: dict[str, Any] | None) -> Temperature | None:
    if raw is None:
        return None
    return Temperature(tuple(map(float, raw["celsius"])), tuple(map(float, raw["relative"])))
