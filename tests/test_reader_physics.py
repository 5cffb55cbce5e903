"""The virtual plate reader's physics against published numbers (physics reference §3–6).

Expected values are computed here from the species data (ε, λmax, quantum yield), from PLR's
published height–volume table of the Corning 96 flat well (``plr_path_cm``) and from its
diameter, never from the backend's code. They run on ``published-1``, the physics they were
written for: published-2's defect wells and path offset are tested in ``test_item8_*``.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from pylabrobot.resources import Greiner_384_wellplate_28ul_Fb
from reader_rig import corning_path_cm, nm, plr_path_cm, read, rig

from labtools.simulators.plate_reading.absorbance import measured_absorbance
from labtools.simulators.plate_reading.params import PlateTruth, ReaderConstants, ReaderTruth
from labtools.simulators.published import published

COLUMNS = [f"A{c}" for c in range(1, 13)]
#: the height-volume table's path (published-2's path offset and defect wells, which move it
#: by design, are tested in test_item8_*)
PHYSICS = "published-1"
CONSTANTS = ReaderConstants.from_profile(published(PHYSICS))


#: reader_rig's ``rig`` on :data:`PHYSICS`
_rig = partial(rig, profile=PHYSICS)


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (slope * x + intercept)
    r2 = 1.0 - float(residual @ residual) / float(((y - y.mean()) ** 2).sum())
    return float(slope), float(intercept), r2


# -- absorbance ------------------------------------------------------------------------------
def test_absorbance_is_linear_with_slope_epsilon_times_path() -> None:
    setup = _rig(seed=3)
    eps = float(setup.world.species["tartrazine"].absorptivity(426.0))
    path = plr_path_cm(200.0)
    conc = np.linspace(0.05, 1.5, 10) / (eps * path)  # 0.05–1.5 OD
    for well, c in zip(COLUMNS, conc, strict=False):
        setup.fill(well, 200.0, tartrazine=float(c))
    values = read(setup.lab(), 426, COLUMNS[:10])
    slope, _, r2 = _fit(conc, np.array([values[w] for w in COLUMNS[:10]]))
    assert r2 > 0.999
    assert slope == pytest.approx(eps * path, rel=0.03)


def test_tartrazine_check_value() -> None:
    """100 µM tartrazine, 200 µL, Corning 96 flat: the physics reference's check value (§8:
    ≈1.56 OD over a 0.55 cm cylinder) over PLR's tapered-well height of 0.619 cm: 1.75 OD, plus
    the plate's ≈0.04 OD."""
    setup = _rig(seed=5)
    setup.fill("B2", 200.0, tartrazine=100e-6)
    setup.fill("B3", 200.0)  # water blank
    values = read(setup.lab(), 426, ["B2", "B3"])
    assert values["B2"] == pytest.approx(1.75 + 0.04, abs=0.04)
    # blank-subtracted, inside the Synergy HT accuracy spec (±1 % ±0.010 OD) plus noise
    expected = 28321.08 * 100e-6 * plr_path_cm(200.0)
    assert abs(values["B2"] - values["B3"] - expected) < 0.01 * expected + 0.02


def test_empty_clear_plate_reads_about_0_04_od() -> None:
    setup = _rig(seed=1)
    values = read(setup.lab(), 450, ["A1", "B1", "C1", "D1"])
    for value in values.values():
        assert value == pytest.approx(0.04, abs=0.012)


def test_stray_light_table_of_the_physics_reference() -> None:
    """s = 5e-4: true 3 → 2.82, true 4 → 3.22; s = 1e-4: true 4 → 3.70 (physics §4)."""
    quiet = ReaderConstants.from_profile(published(PHYSICS), snr0=1e12, od_noise_floor=0.0)
    plate = PlateTruth(plate_od=0.0, well_offsets_od=np.zeros(2))
    rng = np.random.default_rng(0)
    for s, true, expected in ((5e-4, 3.0, 2.82), (5e-4, 4.0, 3.22), (1e-4, 4.0, 3.70)):
        truth = ReaderTruth(s, 0.0, 0.0, 25.0, 1.0, 0.0, 0.0, 0.0)
        got = measured_absorbance(np.array([[true]]), plate, np.array([0]), truth, quiet, rng)
        assert float(got[0, 0]) == pytest.approx(expected, abs=0.01)


def test_concentrated_wells_are_over_range_not_numbers() -> None:
    """True ≈ 52 and 174 OD: no number, listed in over_range (a reader's OVRFLW)."""
    setup = _rig(seed=11)
    setup.fill("C1", 200.0, tartrazine=3e-3)
    setup.fill("C2", 200.0, tartrazine=10e-3)
    setup.fill("C3", 200.0, tartrazine=50e-6)
    result = setup.lab().call(
        "reader_read_absorbance",
        {"plate": "plate_1", "wavelength": nm(426), "wells": ["C1", "C2", "C3"]},
    )
    assert result.ok, result.error
    assert result.data["over_range"] == ["C1", "C2"]
    assert set(result.data["values"]) == {"C3"} and result.data["saturated"] == []


def test_water_band_gives_the_path_length() -> None:
    """PathCheck: (A977 − A900) of the well over water's 1 cm value [V: Molecular Devices
    PathCheck note] measures the liquid height: PLR's 6.19 mm for 200 µL, within the 6.03 mm
    of a 6.35 → 6.86 mm frustum and the 5.41 mm cylinder it replaces only at the low end."""
    setup = _rig(seed=2)
    for well in COLUMNS[:6]:
        setup.fill(well, 200.0)
    lab = setup.lab()
    a977, a900 = read(lab, 977, COLUMNS[:6]), read(lab, 900, COLUMNS[:6])
    delta = np.mean([a977[w] - a900[w] for w in COLUMNS[:6]])
    species = setup.world.species["water"]
    per_cm = float(species.absorptivity(977.0) - species.absorptivity(900.0)) * float(
        species.concentration_molar or 0.0
    )
    # water's 1 cm k-factor at 25 °C [V: Lampinen et al. 2012, Thermo ANMR_MUGO_0412, fig. 6]
    assert per_cm == pytest.approx(0.172, abs=0.001)
    assert delta / per_cm == pytest.approx(plr_path_cm(200.0), rel=0.05)
    assert 0.58 < delta / per_cm < 0.65


@pytest.mark.parametrize(
    "species,molar", [("tartrazine", 40e-6), ("allura_red", 45e-6), ("brilliant_blue", 10e-6)]
)
def test_spectrum_peak_falls_at_lambda_max(species: str, molar: float) -> None:
    setup = _rig(seed=4)
    setup.fill("D4", 200.0, **{species: molar})
    lam = setup.world.species[species].lambda_max_nm
    result = setup.lab().call(
        "reader_read_absorbance_spectrum",
        {
            "plate": "plate_1",
            "wells": ["D4"],
            "start": nm(lam - 60),
            "stop": nm(lam + 60),
            "step": nm(1),
        },
    )
    assert result.ok, result.error
    grid = np.array(result.data["wavelengths"])
    values = np.array(result.data["values"]["D4"])
    assert abs(result.data["peaks"]["D4"]["wavelength"]["value"] - lam) <= 5
    top = np.abs(grid - grid[np.argmax(values)]) <= 15
    a, b, _ = np.polyfit(grid[top], values[top], 2)
    assert -b / (2 * a) == pytest.approx(lam, abs=1.5)


def test_384_well_path_length_from_geometry() -> None:
    """Greiner 384 flat (⌀ 3.3 mm in PLR): 20 µL is a 2.34 mm column."""
    setup = _rig(seed=6, factory=Greiner_384_wellplate_28ul_Fb)
    setup.fill("P24", 20.0, tartrazine=100e-6)
    setup.fill("P23", 20.0)
    values = read(setup.lab(), 426, ["P24", "P23"])
    expected = 28321.08 * 100e-6 * (20.0 / (math.pi * 1.65**2) / 10.0)
    assert values["P24"] - values["P23"] == pytest.approx(expected, rel=0.03)


# -- fluorescence ----------------------------------------------------------------------------
def _fluorescence(setup, wells: list[str], ex: float = 490, em: float = 515) -> dict:
    result = setup.lab().call(
        "reader_read_fluorescence",
        {
            "gain": 0,
            "focal_height": {"value": 0, "unit": "millimeter"},
            "plate": setup.plate.name,
            "wells": wells,
            "excitation_wavelength": nm(ex),
            "emission_wavelength": nm(em),
        },
    )
    assert result.ok, result.error
    return result.data["values"]


#: the top optics' collection half-width (a documented model parameter) and the focal point
#: above the inner bottom: the driver's default 8.5 mm focal height less PLR's 3.03 mm well
#: offset and 0.5 mm bottom for the Corning plate
SIGMA_MM = CONSTANTS.focal_half_width_mm
FOCUS_MM = 8.5 - (3.03 + 0.5)


def _collected(alpha_per_cm: float, column_mm: float, focus_mm: float = FOCUS_MM) -> float:
    """∫₀ᴸ w(z)·10^(−α(L − z)) dz by the trapezoid rule (mm), w the Lorentzian about the focus."""
    z = np.linspace(0.0, column_mm, 40001)
    weight = 1.0 / (1.0 + ((z - focus_mm) / SIGMA_MM) ** 2)
    return float(np.trapezoid(weight * 10.0 ** (-alpha_per_cm * (column_mm - z) / 10.0), z))


def _g(alpha_per_cm: float) -> float:
    """The inner-filter factor of a 200 µL column read at the default focus."""
    column = plr_path_cm(200.0) * 10.0
    return _collected(alpha_per_cm, column) / _collected(0.0, column)


def test_fluorescence_linear_at_low_absorbance() -> None:
    setup = _rig(seed=8)
    conc = np.array([0.5, 1, 2, 5, 10, 20]) * 1e-9
    for well, c in zip(COLUMNS, conc, strict=False):
        setup.fill(well, 200.0, fluorescein=float(c))
    values = _fluorescence(setup, COLUMNS[:6])
    _, intercept, r2 = _fit(conc, np.array([values[w] for w in COLUMNS[:6]]))
    assert r2 > 0.999
    assert intercept > 0  # the plate and buffer autofluorescence floor


def test_fluorescence_inner_filter_matches_the_top_read_model() -> None:
    """F ∝ c·∫w(z)·10^(−α(L − z))dz: sub-linear as fluorescein's own absorbance grows."""
    setup = _rig(seed=9)
    species = setup.world.species["fluorescein"]
    eps_sum = float(species.absorptivity(490.0) + species.absorptivity(515.0))
    low, highs = 2e-9, [1e-6, 2e-6, 5e-6]
    setup.fill("A1", 200.0, fluorescein=low)
    setup.fill("A12", 200.0)  # blank
    for well, c in zip(["A2", "A3", "A4"], highs, strict=True):
        setup.fill(well, 200.0, fluorescein=c)
    values = _fluorescence(setup, ["A1", "A2", "A3", "A4", "A12"])
    per_molar = (values["A1"] - values["A12"]) / low
    for well, c in zip(["A2", "A3", "A4"], highs, strict=True):
        ratio = (values[well] - values["A12"]) / (per_molar * c)
        assert ratio == pytest.approx(_g(eps_sum * c), rel=0.04)
    assert (values["A4"] - values["A12"]) / (per_molar * 5e-6) < 0.85


def test_another_absorber_quenches_fluorescence_by_the_inner_filter() -> None:
    setup = _rig(seed=10)
    library = setup.world.species
    tartrazine = [0.0, 50e-6, 200e-6]
    for well, t in zip(["B1", "B2", "B3"], tartrazine, strict=True):
        setup.fill(well, 200.0, fluorescein=50e-9, tartrazine=t)
    setup.fill("B12", 200.0)
    values = _fluorescence(setup, ["B1", "B2", "B3", "B12"])
    eps_t = float(
        library["tartrazine"].absorptivity(490.0) + library["tartrazine"].absorptivity(515.0)
    )
    for well, t in zip(["B2", "B3"], tartrazine[1:], strict=True):
        ratio = (values[well] - values["B12"]) / (values["B1"] - values["B12"])
        assert ratio == pytest.approx(_g(eps_t * t), rel=0.05)
    assert values["B3"] < values["B2"] < values["B1"]


def test_fluorescence_above_the_detector_ceiling_is_flagged_per_well() -> None:
    setup = _rig(seed=12)
    setup.fill("H12", 200.0, fluorescein=50e-6)
    setup.fill("H11", 200.0, fluorescein=1e-9)
    result = setup.lab().call(
        "reader_read_fluorescence",
        {
            "gain": 0,
            "focal_height": {"value": 0, "unit": "millimeter"},
            "plate": "plate_1",
            "wells": ["H11", "H12"],
            "excitation_wavelength": nm(490),
            "emission_wavelength": nm(515),
        },
    )
    assert result.ok, result.error
    assert result.data["saturated"] == ["H12"]  # like a reader's OVRFLW: no number for it
    assert set(result.data["values"]) == {"H11"} and result.data["values"]["H11"] > 0


# -- luminescence ----------------------------------------------------------------------------
def _luminescence(setup, wells: list[str]) -> dict:
    result = setup.lab().call(
        "reader_read_luminescence", {"plate": setup.plate.name, "wells": wells}
    )
    assert result.ok, result.error
    return result.data["values"]


def test_luminescence_counts_per_pmol() -> None:
    """The species library's glow reagent is set to read ~10⁵ RLU per pmol."""
    setup = _rig(seed=13)
    setup.fill("A1", 100.0, glow_luciferase=10e-9)  # 1 pmol
    setup.fill("A12", 100.0)
    values = _luminescence(setup, ["A1", "A12"])
    assert values["A1"] - values["A12"] == pytest.approx(1e5, rel=0.05)
    assert 5 <= values["A12"] <= 80  # dark counts only


def test_luminescence_crosstalk_lights_up_dark_neighbours() -> None:
    setup = _rig(seed=14)
    setup.fill("D6", 100.0, glow_luciferase=10e-6)  # 1 nmol: ~10⁸ RLU
    for well in ("C5", "C6", "C7", "D5", "D7", "E5", "E6", "E7", "A1", "A12", "H1", "H12"):
        setup.fill(well, 100.0)
    values = _luminescence(
        setup, ["D6", "C6", "E6", "D5", "D7", "C5", "E7", "A1", "A12", "H1", "H12"]
    )
    edge = np.mean([values[w] for w in ("C6", "E6", "D5", "D7")])
    corner = np.mean([values[w] for w in ("C5", "E7")])
    far = np.mean([values[w] for w in ("A1", "A12", "H1", "H12")])
    assert edge > far + 5 * math.sqrt(far + 1)
    assert far < corner < edge
    fraction = (edge - far) / values["D6"]
    assert fraction == pytest.approx(setup.backend.truth.crosstalk, rel=0.3)
    assert 1e-6 <= fraction <= 1e-4 * 1.3


def test_384_well_luminescence_crosstalk() -> None:
    setup = _rig(seed=15, factory=Greiner_384_wellplate_28ul_Fb)
    setup.fill("H12", 20.0, glow_luciferase=50e-6)
    values = _luminescence(setup, ["H12", "H13", "A1"])
    assert values["H13"] > values["A1"] + 5 * math.sqrt(values["A1"] + 1)


def test_indicator_reads_by_its_base_fraction_at_the_buffer_ph() -> None:
    """Bromothymol blue (pKa 7.1 in the species data) at pH 4, 7 and 10, read at 617 nm."""
    setup = _rig(seed=16)
    species = setup.world.species["bromothymol_blue"]
    path = plr_path_cm(200.0)
    buffers = {"E1": ("buffer_ph4", 4.0), "E2": ("buffer_ph7", 7.0), "E3": ("buffer_ph10", 10.0)}
    for well, (buffer, _) in buffers.items():
        setup.fill(well, 200.0, bromothymol_blue=40e-6, **{buffer: 0.05})
    setup.fill("E12", 200.0, buffer_ph7=0.05)
    values = read(setup.lab(), 617, [*buffers, "E12"])
    for well, (_, ph) in buffers.items():
        expected = float(species.absorptivity(617.0, ph)) * 40e-6 * path
        assert values[well] - values["E12"] == pytest.approx(expected, rel=0.02, abs=0.012)
    assert values["E1"] < values["E2"] < values["E3"]


def test_cross_section_path_model_is_the_top_diameter_cylinder() -> None:
    """Optional: the well as a cylinder of its top diameter (6.86 mm) instead of PLR's table."""
    setup = _rig(seed=17)
    setup.backend = type(setup.backend)(setup.world, path_model="cross_section")
    setup.reader.backend = setup.backend
    setup.fill("F1", 200.0, tartrazine=50e-6)
    setup.fill("F2", 200.0)
    values = read(setup.lab(), 426, ["F1", "F2"])
    expected = 28321.08 * 50e-6 * corning_path_cm(200.0)
    assert values["F1"] - values["F2"] == pytest.approx(expected, rel=0.02)
    with pytest.raises(ValueError):
        type(setup.backend)(setup.world, path_model="cone")
