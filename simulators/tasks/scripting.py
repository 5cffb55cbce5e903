"""Helpers for the tasks' scripted protocols: calling tools through a session, quantities,
the small least-squares fits the protocols share, and what the package says of a Corning 96
flat well (the published profile's path and plate), for the protocols that trust it."""

from __future__ import annotations

from functools import cache
from itertools import combinations
from typing import Any

import numpy as np

from labtools.demo.protocol import Call, batch
from labtools.drivers.pylabrobot.plr import cor_96_wellplate_360uL_Fb
from labtools.session import Session
from labtools.simulators.plate_reading.layout import PlateLayout, build_layout
from labtools.simulators.published import published
from labtools.units import QuantityJSON, qty

__all__ = [
    "Call",
    "batch",
    "caller",
    "nm",
    "nnls",
    "no_controls_um",
    "nominal_layout",
    "nominal_path_cm",
    "nominal_plate_od",
    "one_reading",
    "short_of_path",
    "site_of",
    "ul",
    "water_band",
]

#: water's near-infrared band and its baseline (nm): their difference measures a well's path
#: [V: Molecular Devices PathCheck note]
WATER_BAND_NM = (977.0, 900.0)
#: a well whose water band reads this much short of its like wells' (relative) has a defect's
#: path (2.4 % of a plate's wells, a mean 9.5 % short: the published profile); the band's read
#: noise is 1-2 % of it [A]
PATH_SHORTFALL = 0.05


def caller(session: Session) -> Call:
    """Tool calls through ``session.call_tool`` only (never the world), unwrapped."""

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return session.call_tool(name, arguments).unwrap()

    return call


def site_of(deck: dict[str, Any], plate: str) -> str:
    """Where ``plate`` stands in an ``lh_get_deck`` result (its deck site)."""
    return next(lw["location"] for lw in deck["labware"] if lw["name"] == plate)


def ul(value: float) -> QuantityJSON:
    """A volume in µL, as tools take it, rounded to 1 nL."""
    return qty(float(value), "microliter", decimals=3)


def nm(value: float) -> QuantityJSON:
    """A wavelength in nm, as tools take it."""
    return qty(float(value), "nanometer")


def nnls(basis: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Non-negative least squares ``min ‖basis · x − target‖, x ≥ 0``, exact for a few columns:
    every subset of columns is fit by least squares and the best fit with no negative
    coefficient wins (2^columns fits; fine for the four dyes)."""
    columns = basis.shape[1]
    best, best_rss = np.zeros(columns), float(target @ target)
    for size in range(1, columns + 1):
        for active in combinations(range(columns), size):
            coef, *_ = np.linalg.lstsq(basis[:, active], target, rcond=None)
            if (coef < 0).any():
                continue
            residual = target - basis[:, active] @ coef
            rss = float(residual @ residual)
            if rss < best_rss:
                best, best_rss = np.zeros(columns), rss
                best[list(active)] = coef
    return best


@cache
def nominal_layout() -> PlateLayout:
    """A Corning 96 flat-bottom plate as the package gives it: PLR's geometry, the published
    profile's path offset (the meniscus), no lab's own."""
    offset = published()["reader.path.offset"].in_unit("millimeter").expected
    return build_layout(cor_96_wellplate_360uL_Fb(name="nominal"), "plr", None, offset)


def nominal_path_cm(volume_ul: float) -> float:
    """The path (cm) of ``volume_ul`` in a Corning 96 flat well as the package gives it: PLR's
    height–volume table less the published profile's path offset (the meniscus), no lab's own."""
    return float(nominal_layout().path_cm(np.array([float(volume_ul)]))[0])


def nominal_plate_od() -> float:
    """An empty clear plate's optical density (OD) as the published profile gives it."""
    return float(published()["reader.absorbance.plate_od"].expected)


def no_controls_um(
    session: Session,
    sample: str,
    species: str,
    wavelength_nm: float,
    dilution: float = 1.0,
    *,
    plate_od: float | None = None,
) -> float:
    """The experiment without controls, for a sample of one known absorber: ``sample`` diluted
    ``dilution``-fold with water to 200 µL in plate_1:A1 (one tip), read once at
    ``wavelength_nm``, ``plate_od`` (the nominal plate's by default) taken off and the rest
    converted with the species library's ε over the nominal path (µM in the sample). No
    standard, blank or replicate."""
    from labtools.simulators.world import SpeciesLibrary

    call = caller(session)
    total = 200.0
    sample_ul = total / dilution
    moves = [("reservoir:A1", "plate_1:A1", total - sample_ul)] if dilution > 1 else []
    call("lh_transfer", **batch([*moves, (sample, "plate_1:A1", sample_ul)], "new", channels=[0]))
    call("lh_move_plate", plate="plate_1", destination="reader")
    values = call(
        "reader_read_absorbance", plate="plate_1", wavelength=nm(wavelength_nm), wells=["A1"]
    )["values"]
    empty = nominal_plate_od() if plate_od is None else plate_od
    od = float(values.get("A1") or 4.0) - empty  # over range: the range's top
    epsilon = float(SpeciesLibrary.default()[species].absorptivity(wavelength_nm))
    return max(od, 0.0) / (epsilon * nominal_path_cm(total)) * dilution * 1e6


def water_band(call: Call, plate: str, wells: list[str]) -> dict[str, float]:
    """Water's band in ``wells`` of ``plate``, which is in the reader: the reading at
    :data:`WATER_BAND_NM`'s first wavelength less the second (OD; proportional to the well's
    path, whatever else it holds that is clear in the near infrared)."""
    first, second = (
        call("reader_read_absorbance", plate=plate, wavelength=nm(w), wells=wells)["values"]
        for w in WATER_BAND_NM
    )
    return {w: float(first[w] - second[w]) for w in wells}


def short_of_path(ratio: float) -> bool:
    """Whether a well whose water band is ``ratio`` times its like wells' has a defect's path."""
    return ratio < 1.0 - PATH_SHORTFALL


def one_reading(
    call: Call,
    moves: list[tuple[str, str, float]],
    wavelengths_nm: np.ndarray,
) -> np.ndarray:
    """The experiments without controls' one reading: ``moves`` on channel 0 (a new tip each)
    into plate_1:A1, the plate into the reader, A1's spectrum over ``wavelengths_nm`` (evenly
    spaced) less the nominal plate's OD (:func:`nominal_plate_od`)."""
    call("lh_transfer", **batch(moves, "new", channels=[0]))
    call("lh_move_plate", plate="plate_1", destination="reader")
    values = call(
        "reader_read_absorbance_spectrum",
        plate="plate_1",
        wells=["A1"],
        start=nm(float(wavelengths_nm[0])),
        stop=nm(float(wavelengths_nm[-1])),
        step=nm(float(wavelengths_nm[1] - wavelengths_nm[0])),
    )["values"]["A1"]
    return np.array(values, dtype=float) - nominal_plate_od()
