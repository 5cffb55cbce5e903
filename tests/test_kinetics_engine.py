"""The world's enzyme kinetics against the integrated Michaelis–Menten law, numbers not "it ran".

Expected values come from the analytic solution (the implicit integrated rate law, solved here
by bisection), from a fine Runge–Kutta integration of the rate equation, and from textbook
inhibition algebra — never from the engine's own code paths.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from labtools.simulators.world import Mixture, World
from labtools.simulators.world.kinetics import KineticsData, apparent_constants, converted

ALP, PNPP, PNP, INHIBITOR = "alkaline_phosphatase", "pnpp", "p_nitrophenol", "inhibitor_x"


def _bisect_remaining(s0: float, km: float, phi: float) -> float:
    """S solving km·ln(s0/S) + s0 − S = phi, by 200 bisections (independent of Newton)."""
    low, high = 0.0, s0
    for _ in range(200):
        mid = 0.5 * (low + high)
        if mid == 0.0 or km * math.log(s0 / mid) + s0 - mid > phi:
            low = mid  # too little left: the root lies above
        else:
            high = mid
    return 0.5 * (low + high)


def _rk4_converted(s0: float, km: float, vmax: float, seconds: float, steps: int) -> float:
    s, h = s0, seconds / steps

    def rate(x: float) -> float:
        return -vmax * x / (km + x)

    for _ in range(steps):
        k1 = rate(s)
        k2 = rate(s + 0.5 * h * k1)
        k3 = rate(s + 0.5 * h * k2)
        k4 = rate(s + h * k3)
        s += h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return s0 - s


@pytest.mark.parametrize("s0", [1e-6, 5e-5, 1e-3, 2.5e-2])
@pytest.mark.parametrize("km", [5e-5, 5e-4, 5e-3])
@pytest.mark.parametrize("fraction", [1e-9, 1e-4, 0.05, 0.5, 0.95, 1.0, 3.0, 30.0])
def test_converted_solves_the_integrated_rate_law(s0: float, km: float, fraction: float) -> None:
    """Φ spans tiny steps to far past complete conversion, in both of Newton's regimes."""
    phi = fraction * (s0 + km)
    expected = s0 - _bisect_remaining(s0, km, phi)
    got = converted(s0, km, phi)
    assert 0.0 <= got <= s0
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12 * s0)


def test_converted_agrees_with_a_runge_kutta_integration() -> None:
    for s0, km, vmax, seconds in [(1e-4, 5e-5, 1e-7, 600.0), (2e-2, 1e-3, 1e-6, 3600.0)]:
        assert converted(s0, km, vmax * seconds) == pytest.approx(
            _rk4_converted(s0, km, vmax, seconds, 20_000), rel=1e-9
        )


def test_converted_of_nothing_is_nothing() -> None:
    assert converted(0.0, 1e-3, 1.0) == 0.0
    assert converted(1e-3, 1e-3, 0.0) == 0.0


def _without_hydrolysis(world: World) -> World:
    """``world`` with pNPP's (tiny) spontaneous hydrolysis off, so that the analytic law is
    the whole story; it has its own test."""
    world.kinetics.data = dataclasses.replace(world.kinetics.data, spontaneous={})
    return world


def _well(world: World, name: str, **molar: float) -> Mixture:
    world.fill(name, Mixture.solution(200.0, molar))
    return world.contents(name)


def test_a_well_follows_the_integrated_law_with_enzyme_decay() -> None:
    """[E](t) = E₀e^(−k_d t): Km·ln(S₀/S) + S₀ − S = kcat·E₀·(1 − e^(−k_d t))/k_d."""
    world = _without_hydrolysis(World(seed=11))
    truth = world.kinetics.at_work(ALP)  # the lot's and the day's constants
    s0, e0 = 2.0 * truth["km_molar"], 0.5e-9
    _well(world, "plate_1:A1", pnpp=s0, alkaline_phosphatase=e0)
    elapsed = 0.0
    for seconds in [0.5, 3.0, 7.25, 60.0, 600.0, 1200.0, 1.0]:  # uneven steps, as tools take
        world.clock.advance(seconds)
        elapsed += seconds
        well = world.peek("plate_1:A1")  # the contents as of now
        kd = truth["kd_per_s"]
        phi = truth["kcat_per_s"] * e0 * -math.expm1(-kd * elapsed) / kd
        expected = _bisect_remaining(s0, truth["km_molar"], phi)
        assert well.concentration(PNPP) == pytest.approx(expected, rel=1e-9)
        assert well.concentration(PNP) == pytest.approx(s0 - expected, rel=1e-9)
        assert well.concentration(ALP) == pytest.approx(e0 * math.exp(-kd * elapsed), rel=1e-12)


def test_the_result_does_not_depend_on_how_time_was_split() -> None:
    one, many = _without_hydrolysis(World(seed=4)), _without_hydrolysis(World(seed=4))
    s0 = 3.0 * one.kinetics.enzyme(ALP)["km_molar"]
    for world in (one, many):
        _well(world, "plate_1:A1", pnpp=s0, alkaline_phosphatase=1e-9)
    one.clock.advance(900.0)
    for _ in range(900):
        many.clock.advance(1.0)
    a, b = one.peek("plate_1:A1"), many.peek("plate_1:A1")
    assert a.amounts[PNP] == pytest.approx(b.amounts[PNP], rel=1e-12)


def test_a_well_looked_at_late_holds_what_it_would_at_every_step() -> None:
    """Steps run in a container when it is next looked at, each as at its own time: the
    amounts are those of a well looked at after every step, to the bit, hydrolysis and an
    inhibitor included; and the hidden constants the reactions ran on are drawn all the same."""
    late, early = World(seed=6), World(seed=6)
    inhibitor = dict(pnpp=2e-4, alkaline_phosphatase=1e-9, inhibitor_x=1e-4)
    for world in (late, early):
        world.fill("plate_1:A1", Mixture.solution(200.0, inhibitor))
        world.fill("plate_1:A2", Mixture.solution(200.0, dict(pnpp=1e-3)))
    for seconds in [0.5, 3.0, 7.25, 60.0, 600.0, 1.0]:
        for world in (late, early):
            world.clock.advance(seconds)
        early.peek("plate_1:A1"), early.peek("plate_1:A2")
    for well in ("plate_1:A1", "plate_1:A2"):
        assert late.peek(well).amounts == early.peek(well).amounts
    assert late.peek("plate_1:A2").amounts[PNP] > 0.0  # hydrolysis ran
    drawn = World(seed=6)
    drawn.fill("plate_1:A1", Mixture.solution(200.0, inhibitor))
    drawn.clock.advance(60.0)
    assert f"kinetics/{ALP}/lot" in drawn.hidden_truth()  # no one looked at the well
    assert drawn.hidden_truth() == early.hidden_truth()


def test_only_enzyme_and_substrate_wells_react() -> None:
    world = World(seed=2)
    _well(world, "plate_1:A1", pnpp=1e-3)  # substrate only: spontaneous hydrolysis alone
    _well(world, "plate_1:A2", alkaline_phosphatase=1e-9)  # enzyme only: decays
    _well(world, "plate_1:A3", tartrazine=1e-4)  # nothing to do
    before = world.peek("plate_1:A3").amounts.copy()
    world.clock.advance(3600.0)
    rate = KineticsData.default().spontaneous[PNPP][1]
    formed = world.peek("plate_1:A1").concentration(PNP)
    assert formed == pytest.approx(1e-3 * -math.expm1(-rate * 3600.0), rel=1e-9)
    assert PNP not in world.peek("plate_1:A2").amounts
    kd = world.kinetics.enzyme(ALP)["kd_per_s"]
    assert world.peek("plate_1:A2").concentration(ALP) == pytest.approx(
        1e-9 * math.exp(-kd * 3600.0), rel=1e-12
    )
    assert world.peek("plate_1:A3").amounts == before


def test_hidden_constants_are_drawn_per_seed_within_their_priors() -> None:
    drawn = [World(seed=s).kinetics.enzyme(ALP) for s in range(200)]
    km = np.array([d["km_molar"] for d in drawn])
    kcat = np.array([d["kcat_per_s"] for d in drawn])
    half_life_h = np.log(2) / np.array([d["kd_per_s"] for d in drawn]) / 3600.0
    assert km.min() >= 5e-5 and km.max() <= 5e-3
    assert kcat.min() >= 10.0 and kcat.max() <= 1000.0
    assert half_life_h.min() >= 20.0 and half_life_h.max() <= 200.0
    # log-uniform: the geometric middle splits them about evenly
    assert 0.35 < np.mean(km < math.sqrt(5e-5 * 5e-3)) < 0.65
    inhibition = [World(seed=s).kinetics.inhibition(INHIBITOR) for s in range(200)]
    assert {i["mechanism"] for i in inhibition} == {
        "competitive",
        "noncompetitive",
        "uncompetitive",
    }
    assert World(seed=7).kinetics.enzyme(ALP) == World(seed=7).kinetics.enzyme(ALP)


def test_wells_run_on_the_lot_and_the_day_around_the_reference_constants() -> None:
    """ln(at work / reference) is normal around 0 with the spreads of kinetics.toml: Km the
    day's, kcat the lot's and the day's together, Ki the day's; the decay is not varied."""
    data = KineticsData.default()
    enzyme, inhibitor = data.enzymes[ALP], data.inhibitors[INHIBITOR]
    assert (enzyme.lot_sd, enzyme.day_km_sd, enzyme.day_kcat_sd) == (0.10, 0.08, 0.06)
    assert inhibitor.day_ki_sd == 0.06
    logs: dict[str, list[float]] = {"km": [], "kcat": [], "ki": []}
    for seed in range(400):
        kinetics = World(seed=seed).kinetics
        truth, work = kinetics.enzyme(ALP), kinetics.at_work(ALP)
        assert work["kd_per_s"] == truth["kd_per_s"]
        logs["km"].append(math.log(work["km_molar"] / truth["km_molar"]))
        logs["kcat"].append(math.log(work["kcat_per_s"] / truth["kcat_per_s"]))
        ki = kinetics.inhibition(INHIBITOR)["ki_molar"]
        logs["ki"].append(math.log(kinetics.inhibition_at_work(INHIBITOR)["ki_molar"] / ki))
    expected = {
        "km": enzyme.day_km_sd,
        "kcat": math.hypot(enzyme.lot_sd, enzyme.day_kcat_sd),
        "ki": inhibitor.day_ki_sd,
    }
    for key, sd in expected.items():
        values = np.array(logs[key])
        assert abs(values.mean()) < 3.0 * sd / math.sqrt(values.size), key
        assert values.std() == pytest.approx(sd, rel=0.15), key
    # without spreads the wells run on the reference constants exactly
    bare = KineticsData.parse(
        {
            "enzyme": {
                ALP: {
                    "substrate": PNPP,
                    "product": PNP,
                    "km_mM": [1, 2],
                    "kcat_per_s": [1, 2],
                    "half_life_h": [1, 2],
                }
            }
        }
    ).enzymes[ALP]
    rng = np.random.default_rng(0)
    assert bare.draw_lot(rng) == {"activity": 1.0}
    assert bare.draw_day(rng) == {"km": 1.0, "kcat": 1.0}


def test_a_reset_world_reacts_as_a_new_one() -> None:
    fresh, reused = World(seed=5), World(seed=9)
    reused.kinetics.enzyme(ALP)
    reused.reset(5)
    for world in (fresh, reused):
        _well(world, "plate_1:B2", pnpp=1e-3, alkaline_phosphatase=2e-10)
        world.clock.advance(1234.5)
    assert fresh.peek("plate_1:B2") == reused.peek("plate_1:B2")
    assert fresh.hidden_truth() == reused.hidden_truth()


# -- inhibition --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "mechanism, km_factor, vmax_factor",
    [
        ("competitive", 3.0, 1.0),  # Km·(1 + I/Ki), Vmax unchanged
        ("noncompetitive", 1.0, 1.0 / 3.0),  # Km unchanged, Vmax/(1 + I/Ki)
        ("uncompetitive", 1.0 / 3.0, 1.0 / 3.0),  # both divided by (1 + I/Ki)
    ],
)
def test_apparent_constants_follow_the_mechanism(
    mechanism: str, km_factor: float, vmax_factor: float
) -> None:
    """At I = 2·Ki: apparent Km and Vmax measured from initial rates in the world."""
    world = next(
        _without_hydrolysis(w)
        for w in (World(seed=s) for s in range(100))
        if w.kinetics.inhibition(INHIBITOR)["mechanism"] == mechanism
    )
    truth = world.kinetics.at_work(ALP)
    ki = world.kinetics.inhibition_at_work(INHIBITOR)["ki_molar"]
    km, kcat, e0 = truth["km_molar"], truth["kcat_per_s"], 1e-12
    levels = km * np.array([0.2, 0.5, 1.0, 2.0, 5.0])
    seconds = 1.0  # a tiny conversion: initial rates

    def rates(inhibitor: float) -> np.ndarray:
        for j, s in enumerate(levels):
            _well(
                world, f"plate_1:C{j + 1}", pnpp=s, alkaline_phosphatase=e0, inhibitor_x=inhibitor
            )
        world.clock.advance(seconds)
        return np.array(
            [world.peek(f"plate_1:C{j + 1}").concentration(PNP) / seconds for j in range(5)]
        )

    free, inhibited = rates(0.0), rates(2.0 * ki)

    def fit(v: np.ndarray) -> tuple[float, float]:  # Lineweaver–Burk is exact for exact data
        slope, intercept = np.polyfit(1.0 / levels, 1.0 / v, 1)
        return slope / intercept, 1.0 / intercept

    k0, v0 = fit(free)
    k1, v1 = fit(inhibited)
    assert k0 == pytest.approx(km, rel=1e-4) and v0 == pytest.approx(kcat * e0, rel=1e-4)
    assert k1 / k0 == pytest.approx(km_factor, rel=1e-4)
    assert v1 / v0 == pytest.approx(vmax_factor, rel=1e-4)


def test_apparent_constants_algebra() -> None:
    assert apparent_constants(1.0, 10.0, []) == (1.0, 10.0)
    assert apparent_constants(1.0, 10.0, [("competitive", 2.0, 2.0)]) == (2.0, 10.0)
    assert apparent_constants(1.0, 10.0, [("uncompetitive", 2.0, 2.0)]) == (0.5, 5.0)
    assert apparent_constants(1.0, 10.0, [("noncompetitive", 2.0, 2.0)]) == (1.0, 5.0)


def test_priors_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="spread"):
        KineticsData.parse(
            {
                "enzyme": {
                    "e": {
                        "substrate": "s",
                        "product": "p",
                        "km_mM": [1, 2],
                        "kcat_per_s": [1, 2],
                        "half_life_h": [1, 2],
                        "lot_activity_sd": -0.1,
                    }
                }
            }
        )
    with pytest.raises(ValueError, match="mechanisms"):
        KineticsData.parse(
            {"inhibitor": {"x": {"enzyme": "e", "mechanisms": ["allosteric"], "ki_mM": [1, 2]}}}
        )
    with pytest.raises(ValueError, match="prior range"):
        KineticsData.parse(
            {
                "enzyme": {
                    "e": {
                        "substrate": "s",
                        "product": "p",
                        "km_mM": [0, 1],
                        "kcat_per_s": [1, 2],
                        "half_life_h": [1, 2],
                    }
                }
            }
        )
