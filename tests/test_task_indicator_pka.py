"""T5 indicator pKa: the mystery indicator's physics, scoring, protocols, no leaks, rewinds."""

from __future__ import annotations

import json
import math
from functools import partial
from typing import Any

import numpy as np
import pytest

from labtools.journal import WALL_CLOCK_KEYS
from labtools.session import Session
from labtools.simulators.tasks.indicator_pka import SCALE, IndicatorPka, buffers_of
from labtools.simulators.tasks.pka_fit import base_fraction, fit_pka, pka_posterior, rss_profile
from labtools.simulators.world import Mixture, SpeciesLibrary, World
from labtools.simulators.world.hidden_species import (
    PKA_RANGE,
    draw_indicator,
    indicator_species,
    isosbestic_nm,
)
from labtools.units import qty

KEY = "indicator_x"
#: the height-volume table's path (published-2's path offset and defect wells, which move it
#: by design, are tested in test_item8_*)
PHYSICS = "published-1"


@pytest.fixture(scope="module")
def session():
    with Session("indicator_pka", secret="indicator tests") as session:
        yield session


@pytest.fixture(scope="module")
def table_path_session():
    with Session("indicator_pka", secret="indicator tests", profile=PHYSICS) as session:
        yield session


def _pka(session: Session) -> float:
    return session.lab.shared["indicator"].truth["pka"]


def _submit(session: Session, pka: float, sd: float) -> Any:
    return session.call_tool("submit_indicator_pka", {"pka": pka, "uncertainty": sd})


# -- the indicator's physics -------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_drawn_spectra_follow_the_two_form_model_with_an_isosbestic_point(seed) -> None:
    truth = draw_indicator(np.random.default_rng(seed))
    species = indicator_species(KEY, "Indicator X", truth)
    assert PKA_RANGE[0] <= species.pka <= PKA_RANGE[1] and species.pka == truth["pka"]
    acid, base = species.forms["acid"], species.forms["base"]
    assert abs(acid.lambda_max_nm - base.lambda_max_nm) > 60
    nm = np.arange(360.0, 720.0, 5.0)
    for ph in (2.0, species.pka - 0.5, species.pka, species.pka + 1.0, 11.0):
        f = 1.0 / (1.0 + 10.0 ** (species.pka - ph))
        expected = (1 - f) * acid.absorptivity(nm) + f * base.absorptivity(nm)
        assert species.absorptivity(nm, ph) == pytest.approx(expected, rel=1e-12)
    # at pH = pKa, half and half; each form's ε at its λmax as drawn
    midway = species.absorptivity(base.lambda_max_nm, species.pka)
    assert midway == pytest.approx((base.epsilon + acid.absorptivity(base.lambda_max_nm)) / 2)
    assert acid.absorptivity(acid.lambda_max_nm) == pytest.approx(truth["acid_epsilon"])
    # the isosbestic point: one ε at every pH, between the two peaks
    iso = isosbestic_nm(species)
    assert iso is not None
    low, high = sorted((acid.lambda_max_nm, base.lambda_max_nm))
    assert low < iso < high
    at_iso = [float(species.absorptivity(iso, ph)) for ph in np.linspace(1, 13, 13)]
    assert max(at_iso) == pytest.approx(min(at_iso), rel=1e-3)
    assert min(at_iso) > 0.05 * min(acid.epsilon, base.epsilon)


def _read_constructed(session: Session, wavelengths: list[float]) -> tuple[np.ndarray, ...]:
    """20 µM indicator (exactly) in 180 µL of each buffer, wells A1…A10 of plate_1, straight
    into the world; readings at ``wavelengths`` less each well's empty reading. Returns the
    buffers' real pH and the blanked OD (wells × wavelengths)."""
    world: World = session.lab.shared["world"]
    buffers = buffers_of(world.labels)
    wells = [f"A{i + 1}" for i in range(len(buffers))]
    session.call_tool("lh_move_plate", {"plate": "plate_1", "destination": "reader"}).unwrap()
    empty = [_read(session, wells, w) for w in wavelengths]
    for (source, _, _), well in zip(buffers, wells, strict=True):
        mix = world.contents(source).copy().take(180.0)
        mix.add(Mixture.solution(20.0, {KEY: 200e-6}))
        world.fill(f"plate_1:{well}", mix)
    filled = [_read(session, wells, w) for w in wavelengths]
    real = np.array([world.peek(f"plate_1:{w}").ph(world.species) for w in wells])
    return real, np.array(filled).T - np.array(empty).T


def _read(session: Session, wells: list[str], wavelength: float) -> list[float]:
    arguments = {"plate": "plate_1", "wells": wells, "wavelength": _nm(wavelength)}
    values = session.call_tool("reader_read_absorbance", arguments).unwrap()["values"]
    return [values[w] for w in wells]


_nm = partial(qty, unit="nanometer")


@pytest.mark.parametrize("seed", [3, 8])
def test_readings_at_the_base_peak_follow_henderson_hasselbalch(table_path_session, seed) -> None:
    session = table_path_session
    session.reset(seed)
    species = session.lab.shared["world"].species[KEY]
    base_nm = round(species.forms["base"].lambda_max_nm)
    iso_nm = round(isosbestic_nm(species))
    real_ph, od = _read_constructed(session, [base_nm, iso_nm])
    labelled = np.array([ph for _, ph, _ in buffers_of(session.lab.shared["world"].labels)])
    assert np.abs(real_ph - labelled).max() < 0.1 and np.any(real_ph != labelled)
    # the sigmoid in numbers: A(pH) = A_acid + (A_base − A_acid) f(pH), the hidden pKa;
    # a 200 µL Corning well holds a 0.62 cm column (PyLabRobot's height–volume table)
    f = base_fraction(real_ph, species.pka)
    path = od[-1, 0] / (20e-6 * float(species.absorptivity(base_nm, real_ph[-1])))
    assert 0.58 < path < 0.66
    eps_acid = species.forms["acid"].absorptivity(np.array([base_nm]))[0]
    eps_base = species.forms["base"].absorptivity(np.array([base_nm]))[0]
    expected = path * 20e-6 * (eps_acid + (eps_base - eps_acid) * f)
    assert od[:, 0] == pytest.approx(expected, abs=0.01)
    fitted = fit_pka(od[:, :1], real_ph, scale_rounds=0).pka
    assert fitted == pytest.approx(species.pka, abs=0.03)  # one wavelength, reader noise
    # the isosbestic point reads the same at every pH; the base peak does not
    assert np.ptp(od[:, 1]) < 0.015 < 0.1 < np.ptp(od[:, 0])  # reader noise ~0.5 % of ~1 OD


def test_each_world_keeps_its_own_species_library() -> None:
    default = SpeciesLibrary.default()
    with pytest.raises(TypeError):
        default.put(default["tartrazine"])
    world = World(0)
    assert world.species is not default and world.species["tartrazine"] is default["tartrazine"]
    species = indicator_species(KEY, "X", draw_indicator(np.random.default_rng(0)))
    world.species.put(species)
    assert KEY in world.species and KEY not in default and KEY not in World(0).species


# -- statement, submissions, scores ------------------------------------------------------------
def test_statement_is_the_same_for_every_seed_and_the_indicator_differs(session) -> None:
    first = session.reset(0)["task"]
    truth = dict(session.lab.shared["indicator"].truth)
    assert session.reset(1)["task"] == first
    assert session.lab.shared["indicator"].truth["pka"] != truth["pka"]
    assert "reservoir:A2" in first and "pH 2.00 ±0.02" in first and "pH 11.00 ±0.02" in first
    for value in truth.values():
        for text in (f"{value:.2f}", f"{value:.3g}"):
            if len(text.replace(".", "").lstrip("0")) >= 3:
                assert text not in first


@pytest.mark.parametrize(
    "arguments, code",
    [
        ({"pka": 15.0, "uncertainty": 0.1}, "out_of_range"),
        ({"pka": 5.0, "uncertainty": -0.1}, "out_of_range"),
        ({"pka": "5", "uncertainty": 0.1}, "invalid_arguments"),
        ({"pka": 5.0}, "invalid_arguments"),
    ],
)
def test_bad_submissions_are_tool_errors_and_the_episode_goes_on(session, arguments, code) -> None:
    session.reset(2)
    result = session.call_tool("submit_indicator_pka", arguments)
    assert not result.ok and result.error["code"] == code, result.error
    assert not session.done and session.task.submission is None
    assert _submit(session, 5.0, 0.1).ok and session.terminated


def test_scores_reward_accuracy_and_honest_uncertainty(session) -> None:
    session.reset(3)
    pka = _pka(session)
    task: IndicatorPka = session.task

    def raw(value: float, sd: float) -> float:
        task.submission = {"pka": value, "uncertainty": sd}
        return task.score(session.lab)["raw"]

    assert raw(pka, 0.0) == pytest.approx(1.0)
    assert raw(pka + 0.1, 0.0) == pytest.approx(math.exp(-1.0))  # the reference's form
    assert raw(pka - 0.05, 0.0) == pytest.approx(math.exp(-0.5))
    # exact with σ = 0.02: CRPS = σ(2φ(0) − 1/√π) ≈ 0.234 σ
    assert raw(pka, 0.02) == pytest.approx(math.exp(-0.2337 * 0.02 / SCALE), rel=1e-3)
    off = pka + 0.03  # 0.03 off: claiming 0.001 is over-confident, 0.5 under-confident
    assert raw(off, 0.03) > raw(off, 0.001) and raw(off, 0.03) > raw(off, 0.5)
    assert raw(pka + 1.0, 0.05) < 1e-4
    task.submission = None
    assert task.score(session.lab) == {"raw": 0.0}


def test_expert_beats_naive_and_same_seed_gives_same_reward(session) -> None:
    task: IndicatorPka = session.task
    for seed in (0, 1, 2):
        session.reset(seed)
        task.naive(session)
        naive = session.score()
        session.reset(seed)
        task.expert(session)
        expert = session.score()
        assert expert.success and expert.raw > 0.6, expert
        assert abs(expert.components["error"]) < 0.06
        assert naive.raw < expert.raw and not naive.success
    session.reset(2)
    task.expert(session)
    assert session.score() == expert


def _two_forms(nm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An acid band at 430 nm and a stronger base band at 590 nm (OD at 20 µM)."""
    return 0.4 * np.exp(-(((nm - 430) / 40) ** 2)), 0.8 * np.exp(-(((nm - 590) / 30) ** 2))


def test_only_equal_amounts_pin_the_pka() -> None:
    """A shifted pKa, the base spectrum scaled by 10^δ and each well's amount by
    1 − f + f·10^−δ give exactly the same spectra: the amounts' prior is what fixes the pKa."""
    nm, ph = np.arange(380.0, 661.0, 10.0), np.arange(2.0, 12.0)
    acid, base = _two_forms(nm)
    f = base_fraction(ph, 6.0)[:, None]
    spectra = (1 - f) * acid + f * base
    delta = 0.3
    g = base_fraction(ph, 6.0 + delta)[:, None]
    amounts = 1 - f + f * 10**-delta
    assert amounts * ((1 - g) * acid + g * base * 10**delta) == pytest.approx(spectra)


def test_the_posterior_is_honest_on_simulated_spectra() -> None:
    """Quadruplicate wells of ten buffers whose real pH is off by N(0, 0.02²), amounts
    scattering by 1 %, reader noise 0.0015 OD: the errors over many draws match the stated
    uncertainty, which is what the buffers' ± allows (a few hundredths)."""
    rng = np.random.default_rng(4)
    nm, labels = np.arange(380.0, 661.0, 10.0), np.repeat(np.arange(2.0, 12.0), 4)
    acid, base = _two_forms(nm)
    z = []
    for pka in rng.uniform(4.0, 8.5, 40):
        real = labels + np.repeat(rng.normal(0.0, 0.02, 10), 4)
        f = base_fraction(real, pka)[:, None]
        amounts = rng.normal(1.0, 0.01, labels.size)[:, None]
        spectra = amounts * ((1 - f) * acid + f * base)
        spectra = spectra + rng.normal(0.0, 0.0015, spectra.shape)
        guess, sd = pka_posterior(spectra, labels, np.full(labels.size, 0.02))
        assert 0.003 < sd < 0.03
        z.append((guess - pka) / sd)
    assert np.mean(np.square(z)) == pytest.approx(1.0, abs=0.45)


def test_the_hidden_indicator_and_buffers_are_in_the_leak_search(session) -> None:
    """The generic leak test (test_session.py) searches the world's hidden truth: make sure the
    indicator's parameters and the buffers' real pH values are part of it."""
    session.reset(7)
    truth = session.lab.shared["world"].hidden_truth()
    assert f"species/{KEY}" in truth and "species/buffer_ph5/ph" in truth


# -- rewinds -----------------------------------------------------------------------------------
def _episode(session: Session, seed: int) -> tuple[Any, list[str]]:
    session.reset(seed)
    session.task.expert(session)
    events = [
        json.dumps({k: v for k, v in e.items() if k not in WALL_CLOCK_KEYS}, sort_keys=True)
        for e in session.lab.journal.events()
        if "tool" in e
    ]
    return session.score(), events


def test_a_rewound_session_gives_exactly_what_a_fresh_one_gives() -> None:
    """An earlier episode on another seed fills the reader's ε cache with another indicator;
    the rewound episode must not see it."""
    with Session("indicator_pka", secret="t") as fresh:
        expected = _episode(fresh, 5)
    with Session("indicator_pka", secret="t") as used:
        _episode(used, 3)
        assert _episode(used, 5) == expected


def test_a_rewound_lab_reads_as_a_newly_built_one() -> None:
    calls = [
        (
            "lh_transfer",
            _batch([("reservoir:A7", "plate_1:A1", 180), ("reservoir:A2", "plate_1:A1", 20)]),
        ),
        ("lh_move_plate", {"plate": "plate_1", "destination": "reader"}),
        (
            "reader_read_absorbance_spectrum",
            {
                "plate": "plate_1",
                "wells": ["A1"],
                "start": _nm(400),
                "stop": _nm(640),
                "step": _nm(20),
            },
        ),
    ]
    task = IndicatorPka()
    fresh = task.build_lab(9)
    used = task.build_lab(4)
    try:
        pristine = used.checkpoint()
        _run(used, calls)
        used.rewind(pristine, seed=9)
        for lab in (fresh, used):
            assert lab.shared["world"].hidden_truth()[f"species/{KEY}"]
        worlds = [lab.shared["world"] for lab in (fresh, used)]
        assert worlds[0].species[KEY] == worlds[1].species[KEY]
        assert worlds[0].species["buffer_ph6"].ph == worlds[1].species["buffer_ph6"].ph
        assert _run(fresh, calls) == _run(used, calls)
    finally:
        fresh.close()
        used.close()


def _batch(transfers: list[tuple[str, str, float]]) -> dict[str, Any]:
    return {
        "transfers": [
            {"source": s, "destination": d, "volume": {"value": v, "unit": "microliter"}}
            for s, d, v in transfers
        ],
        "tip_rack": "tips_300ul",
        "tips": "new",
        "channels": [0, 1],
        "mix_cycles": 0,
        "mix_volume": {"value": 0.0, "unit": "microliter"},
    }


def _run(lab: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    results = [lab.call(tool, arguments) for tool, arguments in calls]
    assert all(result.ok for result in results), [r.error for r in results if not r.ok]
    return [json.dumps(result.to_dict()) for result in results]


def test_the_scan_s_kept_projections_follow_the_ph_values() -> None:
    """The grid's projections are kept between fits: a second scan gives the first's RSS to
    the bit, and other pH values get their own (each point as a scan of that pKa alone)."""
    rng = np.random.default_rng(3)
    spectra = rng.uniform(0.0, 1.0, (6, 5))
    grid = np.arange(0.0, 14.01, 0.5)
    for ph in (np.linspace(4.0, 9.0, 6), np.linspace(5.0, 10.0, 6)):
        first = rss_profile(spectra, ph, grid)
        assert np.array_equal(rss_profile(spectra, ph, grid), first)
        alone = [rss_profile(spectra, ph, np.array([pka]))[0] for pka in grid]
        assert first == pytest.approx(alone, rel=1e-12, abs=1e-12)
