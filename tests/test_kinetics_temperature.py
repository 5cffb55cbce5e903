"""Enzyme rates against temperature, held to the published figures they claim.

Rates are measured in the world's wells (initial rates over a tiny conversion, the 56 °C heat
test as a clinical laboratory runs it) and compared with numbers computed here from the
sources' own figures and the gas constant, never with the engine's formulas:

- Copeland, Nealon & Rej 1985 (Clin. Chem. 31:185): linear Arrhenius behaviour 20–37 °C with
  Ea 30–36 kJ/mol; apparent Km for pNPP at 37 °C typically half that at 25 °C;
- the 56 °C / 10 min heat-inactivation test: ≤ 20 % of the activity left for bone ALP, 21–55 %
  for liver or intestinal ALP, > 55 % for placental ALP;
- Walstra, Physical Chemistry of Foods (2003), Table 4.2: Q10 10–150 for protein denaturation.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from labtools.simulators.world import Mixture, World

ALP, PNPP, PNP = "alkaline_phosphatase", "pnpp", "p_nitrophenol"
R = 8.314462618  # J/(mol K), CODATA
SEEDS = range(40)


def _k(celsius: float) -> float:
    return celsius + 273.15


def _ratio_for(ea_j: float, low_c: float, high_c: float) -> float:
    """An Arrhenius rate ratio k(high)/k(low) for activation energy ``ea_j``."""
    return math.exp(ea_j / R * (1.0 / _k(low_c) - 1.0 / _k(high_c)))


def _world(seed: int) -> World:
    """A world without pNPP's spontaneous hydrolysis (a background of its own)."""
    world = World(seed=seed)
    world.kinetics.data = dataclasses.replace(world.kinetics.data, spontaneous={})
    return world


def _rate(world: World, celsius: float, s: float, e0: float = 1e-12, seconds: float = 1.0) -> float:
    """Initial rate (M/s) in a well at ``celsius`` with substrate ``s`` (M)."""
    well = Mixture.solution(200.0, {PNPP: s, ALP: e0})
    world.kinetics.react(well, seconds, celsius)
    return well.concentration(PNP) / seconds


def _activity_after(world: World, celsius: float, seconds: float) -> float:
    """Activity (initial rate at 25 °C, saturating) of enzyme held ``seconds`` at ``celsius``."""
    km = world.kinetics.at_work(ALP)["km_molar"]
    held = Mixture.solution(200.0, {ALP: 1e-9})
    world.kinetics.react(held, seconds, celsius)
    well = Mixture.solution(200.0, {PNPP: 1e3 * km, ALP: held.concentration(ALP) * 1e-3})
    world.kinetics.react(well, 1.0)
    return well.concentration(PNP)


@pytest.mark.parametrize("seed", SEEDS)
def test_arrhenius_between_20_and_37_c_with_copelands_activation_energy(seed: int) -> None:
    """Saturating initial rates: ln v against 1/T is a line (20–37 °C) of slope −Ea/R with Ea
    30–36 kJ/mol, so v(37)/v(25) lies in 1.60–1.75."""
    world = _world(seed)
    km25 = world.kinetics.at_work(ALP)["km_molar"]
    temperatures = np.array([20.0, 25.0, 30.0, 37.0])
    rates = np.array([_rate(world, t, 1e4 * km25) for t in temperatures])
    slope, intercept = np.polyfit(1.0 / (temperatures + 273.15), np.log(rates), 1)
    residual = np.log(rates) - (slope * (1.0 / (temperatures + 273.15)) + intercept)
    assert np.abs(residual).max() < 1e-3  # linear Arrhenius behaviour
    ea = -slope * R
    assert 30e3 * 0.999 <= ea <= 36e3 * 1.001
    ratio = rates[3] / rates[1]
    assert _ratio_for(30e3, 25, 37) * 0.999 <= ratio <= _ratio_for(36e3, 25, 37) * 1.001
    assert 1.59 < ratio < 1.76


def test_km_at_37_c_is_about_half_that_at_25_c() -> None:
    """Apparent Km from initial rates (Lineweaver–Burk, exact for exact data) at both
    temperatures: the ratio lies within the drawn 0.4–0.6 and averages about a half."""
    ratios = []
    for seed in SEEDS:
        world = _world(seed)
        km25 = world.kinetics.at_work(ALP)["km_molar"]
        levels = km25 * np.array([0.2, 0.5, 1.0, 2.0, 5.0])

        def km_at(celsius: float, levels: np.ndarray = levels, world: World = world) -> float:
            v = np.array([_rate(world, celsius, s) for s in levels])
            slope, intercept = np.polyfit(1.0 / levels, 1.0 / v, 1)
            return slope / intercept

        ratios.append(km_at(37.0) / km_at(25.0))
    ratios_ = np.array(ratios)
    assert ratios_.min() >= 0.4 * 0.999 and ratios_.max() <= 0.6 * 1.001
    assert 0.45 < ratios_.mean() < 0.55


def test_the_56_c_heat_test_classes_the_enzyme_as_heat_labile() -> None:
    """10 min at 56 °C leaves 10–55 % of the activity: the bone (≤ 20 %) to liver/intestinal
    (21–55 %) bands, never placental (> 55 %); an hour at 25 °C loses a few % at most."""
    left, room = [], []
    for seed in SEEDS:
        world = _world(seed)
        unheated = _activity_after(world, 25.0, 0.0)
        left.append(_activity_after(world, 56.0, 600.0) / unheated)
        room.append(_activity_after(world, 25.0, 3600.0) / unheated)
    assert min(left) >= 0.10 * 0.999 and max(left) <= 0.55 * 1.001
    assert min(left) < 0.20 < max(left)  # the seeds span both bands
    assert min(room) > 0.96  # half-lives of 20-200 h at room temperature (kinetics.toml)


def test_room_temperature_constants_are_the_reference_constants() -> None:
    """At 25 °C the wells run on exactly the constants the tasks score against, and a run at
    room temperature draws no temperature truth."""
    world = World(seed=3)
    assert world.kinetics.at_work(ALP, 25.0) == world.kinetics.at_work(ALP)
    well = Mixture.solution(200.0, {PNPP: 1e-3, ALP: 1e-9})
    world.fill("plate_1:A1", well)
    world.clock.advance(600.0)
    assert not any(key.endswith("/temperature") for key in world.hidden_truth())


def test_unfolding_has_a_protein_denaturation_temperature_dependence() -> None:
    """kd's Q10 at 56 °C lies within Walstra's 10–150 for protein denaturation (catalysis:
    Q10 about 1.5), and the slow room-temperature loss stays positive for every seed."""
    for seed in SEEDS:
        kinetics = World(seed=seed).kinetics
        kd = [kinetics.at_work(ALP, t)["kd_per_s"] for t in (51.0, 56.0, 61.0)]
        assert 10.0 <= kd[2] / kd[0] <= 150.0
        kcat = [kinetics.at_work(ALP, t)["kcat_per_s"] for t in (51.0, 61.0)]
        assert 1.3 < kcat[1] / kcat[0] < 1.6
        assert kinetics.at_work(ALP, 4.0)["kd_per_s"] > 0.0


def _product(world: World, celsius: float, seconds: float) -> float:
    """Product (M) after ``seconds`` at ``celsius`` from 10 Km(25 °C) of pNPP."""
    km25 = world.kinetics.at_work(ALP)["km_molar"]
    well = Mixture.solution(200.0, {PNPP: 10.0 * km25, ALP: 1e-12})
    world.kinetics.react(well, seconds, celsius)
    return well.concentration(PNP)


def test_a_ten_minute_assay_has_a_temperature_optimum() -> None:
    """Product after 10 min rises with temperature, peaks and falls as the enzyme unfolds: one
    maximum, between 45 and 55 °C for every seed (a 30-min assay peaks lower)."""
    grid = np.arange(20.0, 65.01, 0.5)
    optima, optima_30 = [], []
    for seed in SEEDS:
        world = _world(seed)
        product = np.array([_product(world, t, 600.0) for t in grid])
        best = int(np.argmax(product))
        assert np.all(np.diff(product[: best + 1]) > 0) and np.all(np.diff(product[best:]) < 0)
        assert product[-1] < 0.5 * product[best]
        optima.append(grid[best])
        long = np.array([_product(world, t, 1800.0) for t in grid])
        optima_30.append(grid[int(np.argmax(long))])
    assert min(optima) >= 45.0 and max(optima) <= 55.0
    assert all(b < a for a, b in zip(optima, optima_30, strict=True))
