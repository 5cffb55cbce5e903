"""The virtual balance through ``Lab.virtual``: the MT-SICS driver over its emulator, weighing
what the liquid handler put in the weighing vessel — gravimetric checks that recover a
channel's hidden delivery, evaporation, settling, determinism, rewind, and refusals that change
nothing."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from strategies import llm_arguments

from labtools import Lab
from labtools.simulators.balance.physics import (
    Evaporation,
    buoyancy_factor,
    water_density,
    z_factor,
)
from labtools.simulators.world import Mixture

VESSEL = "weighing_vessel"
BALANCE_TOOLS = ["balance_weigh", "balance_tare", "balance_zero", "balance_get_info"]


def _ul(value: float) -> dict:
    return {"value": value, "unit": "microliter"}


def _grams(lab: Lab, mode: str = "stable") -> float:
    result = lab.call("balance_weigh", {"mode": mode})
    assert result.ok, result.error
    return result.data["mass"]["value"]


@pytest.fixture(scope="module")
def built():
    """The virtual lab, and its checkpoint as built."""
    with Lab.virtual(seed=0) as instance:
        yield instance, instance.checkpoint()


@pytest.fixture
def lab(built):
    return built[0]


@pytest.fixture
def fresh(built):
    """The module's lab rewound to seed 0 (as newly built)."""
    lab, checkpoint = built
    lab.rewind(checkpoint, seed=0)
    return lab


def test_the_virtual_lab_has_a_balance_under_its_vessel(fresh) -> None:
    info = fresh.call("balance_get_info", {}).data
    emulator = fresh.instruments["balance"].transport.device
    assert info["serial_number"] == emulator.serial_number  # read over MT-SICS (@)
    assert (info["model"], info["capacity"], info["readability"]) == (
        "XPR205",
        {"value": 220.0, "unit": "gram"},
        {"value": 1e-05, "unit": "gram"},
    )
    deck = fresh.call("lh_get_deck", {}).data
    (vessel,) = [lw for lw in deck["labware"] if lw["name"] == VESSEL]
    assert vessel["location"] == "balance" and vessel["well_capacity"]["value"] == 10_000
    # switched on with the vessel on its pan: the initial zero took the vessel's hidden mass
    assert abs(_grams(fresh)) <= 1e-4
    assert emulator.initial_zero_g == emulator.vessel_g and 20.0 <= emulator.vessel_g <= 30.0


def test_tare_then_dispense_weighs_what_was_delivered(fresh) -> None:
    tare = fresh.call("balance_tare", {"mode": "stable"}).data
    assert tare["stable"] and fresh.state()["balance"]["tare"] == tare["tare"]
    assert abs(_grams(fresh)) <= 5e-5
    world = fresh.shared["world"]
    assert fresh.call("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]}).ok
    item = {"channel": 0, "well": "reservoir:A1", "volume": _ul(200)}
    assert fresh.call("lh_aspirate", {"items": [item]}).ok
    assert fresh.call("lh_dispense", {"items": [{**item, "well": VESSEL}]}).ok
    volume_ml = world.peek(VESSEL).volume_ul / 1000
    rho = water_density(world.temperature(VESSEL))
    expected = volume_ml * rho * buoyancy_factor(rho)
    started = world.clock.now()
    moving = fresh.call("balance_weigh", {"mode": "immediate"}).data
    assert moving["stable"] is False  # the display is still settling
    assert world.clock.now() == started  # an immediate reading waits for nothing
    assert _grams(fresh) == pytest.approx(expected, abs=1e-4)
    settling = fresh.instruments["balance"].transport.device.settling_s
    assert 0 < world.clock.now() - started <= settling
    settled = fresh.call("balance_weigh", {"mode": "immediate"}).data
    assert settled["stable"] is True


def test_gravimetric_checks_recover_each_channels_hidden_delivery(built) -> None:
    """ISO 8655-6 style: ten 100 µL deliveries of water with one channel and 300 µL tips,
    each weighed (before and after), converted with Z at the vessel's temperature. The 95 %
    interval of the mean delivered volume holds the channel's hidden mean delivery
    (``ChannelModel.mean``) for nine or more of ten seeds (expected 9.5; all ten here)."""
    lab, checkpoint = built
    held, widths = 0, []
    for seed in range(10):
        lab.rewind(checkpoint, seed=seed)
        world = lab.shared["world"]
        channel = lab.instruments["lh"].plr.backend.channels[0][300.0]
        truth = channel.mean(100.0)
        assert lab.call("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]}).ok
        z = z_factor(world.temperature(VESSEL))
        delivered = []
        for _ in range(10):
            draw = {"channel": 0, "well": "reservoir:A1", "volume": _ul(100)}
            assert lab.call("lh_aspirate", {"items": [draw]}).ok
            before = _grams(lab)
            assert lab.call("lh_dispense", {"items": [{**draw, "well": VESSEL}]}).ok
            delivered.append((_grams(lab) - before) * 1000 * z)  # mg × µL/mg
        mean = statistics.mean(delivered)
        half = stats.t.ppf(0.975, len(delivered) - 1) * statistics.stdev(delivered) / math.sqrt(10)
        held += abs(mean - truth) <= half
        widths.append(half)
        # the channel's own scatter, seen through the balance
        assert statistics.stdev(delivered) == pytest.approx(channel.sigma(100.0), rel=0.8)
    assert held >= 9, held
    assert max(widths) < 0.2  # µL: the check resolves biases of a few tenths of a percent


def test_water_evaporates_from_the_open_vessel(fresh) -> None:
    world = fresh.shared["world"]
    world.fill(VESSEL, Mixture.solution(1000.0, {"tartrazine": 1e-4}))
    start = _grams(fresh)
    amount = world.peek(VESSEL).amounts["tartrazine"]
    world.clock.advance(1800.0)  # half an hour: the loss is ~100 times the readings' noise
    lost = start - _grams(fresh)
    emulator = fresh.instruments["balance"].transport.device
    height = emulator.vessel.liquid_height_m(1000.0)
    humidity = world.hidden_truth()["balance/humidity"]  # this seed's draft shield
    assert 0.3 <= humidity <= 0.7 and emulator.evaporation.humidity == humidity
    rate = Evaporation(0.01, 0.04, humidity=humidity).rate_g_s(25.0, height)
    assert 0.5e-6 < rate < 5e-6  # g/s: about 0.1 mg per minute
    assert lost == pytest.approx(rate * 1800.0 * buoyancy_factor(0.997), rel=0.03)
    assert world.peek(VESSEL).amounts["tartrazine"] == amount  # only water leaves
    assert world.peek(VESSEL).volume_ul == pytest.approx(1000.0 - rate * 1800 / 0.997e-3, rel=1e-3)


def test_zero_beyond_its_range_is_refused_and_changes_nothing(fresh) -> None:
    world = fresh.shared["world"]
    world.fill(VESSEL, Mixture.solution(1000.0, {}))  # 1 g: within ±2 % of 220 g
    assert fresh.call("balance_zero", {"mode": "stable"}).data == {"zeroed": True, "stable": True}
    assert abs(_grams(fresh)) <= 1e-4
    world.fill(VESSEL, Mixture.solution(6000.0, {}))  # 5 g more: beyond the zero range
    assert fresh.call("balance_tare", {"mode": "stable"}).ok
    before, now = fresh.state(), world.clock.now()
    refused = fresh.call("balance_zero", {"mode": "stable"})
    assert refused.error["code"] == "precondition_failed" and "tare" in refused.error["hint"]
    assert fresh.state() == before  # the tare is still in force
    assert world.clock.now() - now <= 2.0  # it waited for stability, no more
    assert abs(_grams(fresh)) <= 1e-4


def test_an_overloaded_balance_says_so(fresh) -> None:
    fresh.shared["world"].fill(VESSEL, Mixture.solution(250_000.0, {}))  # 250 mL: past 220 g
    refused = fresh.call("balance_weigh", {"mode": "stable"})
    assert refused.error["code"] == "precondition_failed"
    assert "overload" in refused.error["message"]


def test_same_seed_same_readings_other_seed_another_balance() -> None:
    def session(seed: int) -> list:
        with Lab.virtual(seed=seed) as lab:
            out = [lab.call("balance_get_info", {}).data["serial_number"]]
            out += [
                lab.call(t, {"mode": m}).data
                for t in ("balance_weigh", "balance_tare")
                for m in ("stable", "immediate")
            ]
            return out

    assert session(3) == session(3)
    assert session(3)[0] != session(4)[0]


def test_rewind_returns_the_balance_as_switched_on(fresh) -> None:
    first = _grams(fresh)
    assert fresh.call("balance_tare", {"mode": "stable"}).ok
    fresh.shared["world"].fill(VESSEL, Mixture.solution(500.0, {}))
    rewound = fresh.checkpoint()  # taken with a tare and water in the vessel
    with Lab.virtual(seed=0) as new:
        assert fresh.state()["balance"]["tare"] is not None
        fresh.rewind(rewound, seed=0)  # the world as built: empty vessel, balance just on
        assert fresh.state()["balance"] == {
            **new.state()["balance"],
            "tare": fresh.state()["balance"]["tare"],
        }
        assert _grams(fresh) == _grams(new) == pytest.approx(first, abs=1e-4)


SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("tool", BALANCE_TOOLS)
@SETTINGS
@given(data=st.data())
def test_bad_input_is_refused_and_changes_nothing(lab, tool: str, data) -> None:
    arguments = data.draw(llm_arguments(lab.tool_spec(tool).input_schema))
    world = lab.shared["world"]
    before = (lab.state(), world.clock.now(), world.peek(VESSEL).volume_ul)
    emulator = lab.instruments["balance"].transport.device
    device = (emulator.zero_g, emulator.tare_g)
    result = lab.call(tool, arguments)
    if result.ok:
        return
    error = result.error
    assert error["code"] != "instrument_error", error  # bad input never reaches the wire
    if error["code"] in {"invalid_arguments", "unit_error", "out_of_range"}:
        assert error["field"] is not None and error["hint"], error
    else:  # a valid call the balance refused (zeroing the vessel): said why
        assert (error["code"], arguments) == ("precondition_failed", {"mode": arguments["mode"]})
    assert (lab.state(), world.clock.now(), world.peek(VESSEL).volume_ul) == before
    assert (emulator.zero_g, emulator.tare_g) == device


def test_the_balance_takes_its_unit_from_the_profile() -> None:
    """``balance.*`` of the world's profile: fixed values are the emulator's, priors are drawn
    per seed as hidden truth, and no other instrument's draw moves."""
    from labtools.simulators.profile import Parameter
    from labtools.simulators.published import published

    fixed = {
        "balance.XPR205.repeatability": Parameter("", "microgram", 4.0),  # any unit of mass
        "balance.XPR205.settling_time": Parameter("", "second", 3.0),
        "balance.evaporation.humidity": Parameter("", "dimensionless", 0.9),
        "balance.vessel.mass": Parameter("", "gram", 21.5),
    }
    profile = published().with_values(fixed, name="a drier balance")
    with Lab.virtual(seed=2, profile=profile) as lab, Lab.virtual(seed=2) as default:
        emulator = lab.instruments["balance"].transport.device
        assert emulator.repeatability_g == pytest.approx(4e-6, rel=1e-12)
        assert (emulator.settling_s, emulator.evaporation.humidity) == (3.0, 0.9)
        assert emulator.vessel_g == 21.5 == emulator.initial_zero_g
        drawn = default.shared["world"].hidden_truth()
        assert 0.3 <= drawn["balance/humidity"] <= 0.7
        assert 0.0075e-3 <= drawn["balance/repeatability_g"] <= 0.015e-3
        assert drawn["balance/settling_s"] == 1.5
        others = {k: v for k, v in drawn.items() if not k.startswith("balance/")}
        mine = lab.shared["world"].hidden_truth()
        assert {k: v for k, v in mine.items() if not k.startswith("balance/")} == others
        # a stable reading waits the profile's settling time after a dispense
        world = lab.shared["world"]
        assert lab.call("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]}).ok
        item = {"channel": 0, "well": "reservoir:A1", "volume": _ul(100)}
        assert lab.call("lh_aspirate", {"items": [item]}).ok
        assert lab.call("lh_dispense", {"items": [{**item, "well": VESSEL}]}).ok
        started = world.clock.now()
        assert _grams(lab) == pytest.approx(0.1, rel=0.05)
        assert world.clock.now() - started == pytest.approx(3.0)
