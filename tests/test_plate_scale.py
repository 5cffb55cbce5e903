"""Plate-scale liquid handling: multi-channel aspirate/dispense/mix and batched lh_transfer.

Checked on the physics backend's recorded calls (``use_channels`` per PLR operation), PLR's
belief (``lab.state()``) and the world's true contents.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lh_rig import Rig, rig, ul

from labtools import Lab
from labtools.result import ToolResult
from labtools.session.budget import Usage

ROWS = "ABCDEFGH"


def record(setup: Rig) -> list[tuple[str, list[int]]]:
    """Every multi-channel backend operation from now on, as (kind, use_channels)."""
    calls: list[tuple[str, list[int]]] = []
    backend = setup.backend
    for kind in ("aspirate", "dispense", "pick_up_tips", "drop_tips"):
        original = getattr(backend, kind)

        async def spy(ops: Any, use_channels: list[int], _o: Any = original, _k: str = kind) -> Any:
            calls.append((_k, list(use_channels)))
            return await _o(ops, use_channels)

        setattr(backend, kind, spy)
    return calls


def batch(
    transfers: list[tuple[str, str, float]],
    tips: str = "new",
    rack: str = "tips_300ul",
    mix: tuple[int, float] = (0, 0.0),
    channels: list[int] | None = None,
) -> dict[str, Any]:
    return {
        "transfers": [{"source": s, "destination": d, "volume": ul(v)} for s, d, v in transfers],
        "tip_rack": rack,
        "tips": tips,
        "channels": channels or [],
        "mix_cycles": mix[0],
        "mix_volume": ul(mix[1]),
    }


def truth(setup: Rig) -> str:
    world = setup.world
    return json.dumps({k: world.contents(k).state() for k in sorted(world.containers())})


@pytest.fixture
def setup() -> Rig:
    return rig(seed=5)


@pytest.fixture
def filled(setup: Rig) -> Rig:
    """plate_1 columns 1 and 2 hold 200 µL of tartrazine stock in every row."""
    wells = [f"plate_1:{r}{c}" for c in (1, 2) for r in ROWS]
    setup.ok("lh_transfer", batch([("reservoir:A1", w, 200) for w in wells], tips="reuse"))
    return setup


# -- multi-channel tools ---------------------------------------------------------------------
def test_multi_item_aspirate_is_one_plr_call_and_reports_each_channel(filled: Rig) -> None:
    filled.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0, 1, 2]})
    calls = record(filled)
    items = [{"channel": i, "well": f"plate_1:{ROWS[i]}1", "volume": ul(50 + i)} for i in range(3)]
    moved = filled.ok("lh_aspirate", {"items": items})["items"]
    assert calls == [("aspirate", [0, 1, 2])]
    assert [m["tip_volume"]["value"] for m in moved] == [50, 51, 52]
    assert [m["well_volume"]["value"] for m in moved] == [150, 149, 148]
    filled.ok("lh_mix", {"items": items, "cycles": 2})
    assert calls[1:] == [("aspirate", [0, 1, 2]), ("dispense", [0, 1, 2])] * 2
    back = [{**it, "well": f"plate_2:{ROWS[it['channel']]}1"} for it in items]
    filled.ok("lh_dispense", {"items": back})
    assert calls[-1] == ("dispense", [0, 1, 2])


def test_a_refused_multi_item_aspirate_changes_nothing(filled: Rig) -> None:
    filled.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0, 1, 2, 3]})
    calls = record(filled)
    before = filled.snapshot()
    items = [{"channel": i, "well": f"plate_1:{ROWS[i]}1", "volume": ul(50)} for i in range(4)]
    for i, (key, value, code) in enumerate(
        [
            ("volume", ul(195), "interlock"),  # below the dead volume
            ("channel", 9, "out_of_range"),
            ("channel", 0, "invalid_arguments"),  # channel 0 twice
            ("well", "plate_9:A1", "unknown_resource"),
        ]
    ):
        bad = [dict(it) for it in items]
        bad[3 - i % 2][key] = value
        result = filled.call("lh_aspirate", {"items": bad})
        assert not result.ok and result.error["code"] == code, result.error
        assert result.error["field"] == f"/items/{3 - i % 2}/{key}", result.error
        assert filled.snapshot() == before
    tipless = filled.call("lh_aspirate", {"items": [*items[:2], {**items[2], "channel": 5}]})
    assert tipless.error["field"] == "/items/2/channel"
    assert filled.snapshot() == before and calls == []


def test_channels_sharing_a_trough_count_together(setup: Rig) -> None:
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_1000ul", "channels": [0, 1, 2]})
    well = setup.well("reservoir:A1")
    well.tracker.set_volume(2000.0)  # the operator's word: 2 mL left in the trough
    before = setup.snapshot()
    items = [{"channel": i, "well": "reservoir:A1", "volume": ul(700)} for i in range(3)]
    result = setup.call("lh_aspirate", {"items": items})  # 2100 µL from 2000
    assert result.error["code"] == "interlock" and result.error["field"] == "/items/2/volume"
    assert setup.snapshot() == before
    two_wells = [{**items[0], "well": "plate_1:A1"}, {**items[1], "well": "plate_1:A1"}, items[2]]
    assert setup.call("lh_aspirate", {"items": two_wells}).error["field"] == "/items/2/well"


# -- lh_transfer -----------------------------------------------------------------------------
def test_sixteen_transfers_on_eight_channels_take_two_rounds(filled: Rig) -> None:
    calls = record(filled)
    moves = [(f"plate_1:{r}{c}", f"plate_2:{r}{c}", 50) for c in (1, 2) for r in ROWS]
    done = filled.ok("lh_transfer", batch(moves))
    all8 = list(range(8))
    assert [c for c in calls if c[0] in ("aspirate", "dispense")] == [
        ("aspirate", all8),
        ("dispense", all8),
    ] * 2
    assert calls.count(("pick_up_tips", all8)) == 2 == calls.count(("drop_tips", all8))
    assert done["rounds"] == 2 and done["trips"] == 16 and done["tips_used"] == 16
    assert done["volume"] == ul(800.0) and done["notes"] == []
    assert done["seconds"]["value"] > 0
    state = filled.lab.state()["lh"]
    assert all(ch["tip"] is None for ch in state["channels"])  # tips dropped at the end
    # channel i served row i: back to front
    world = filled.world
    assert all(world.contents(f"plate_2:{r}1").volume_ul == pytest.approx(50, abs=3) for r in ROWS)


@pytest.mark.parametrize(("tips", "used"), [("new", 16), ("per_source", 8), ("reuse", 4)])
def test_tip_policies_count_tips(setup: Rig, tips: str, used: int) -> None:
    # 16 transfers from two troughs into plate_1 rows A–H, columns 1–2, on 4 channels
    moves = [(f"reservoir:A{c}", f"plate_1:{r}{c}", 20) for c in (1, 2) for r in ROWS]
    before = setup.lab.state()["lh"]["tips_left"]["tips_300ul"]
    done = setup.ok("lh_transfer", batch(moves, tips=tips, channels=[0, 1, 2, 3]))
    assert done["tips_used"] == used
    assert setup.lab.state()["lh"]["tips_left"]["tips_300ul"] == before - used


def test_a_volume_above_the_tip_is_split_into_trips(setup: Rig) -> None:
    calls = record(setup)
    done = setup.ok("lh_transfer", batch([("reservoir:A1", "cuvette", 700)], channels=[3]))
    assert done["trips"] == 3 and done["tips_used"] == 1
    assert done["notes"] == [{"transfer": 0, "note": "split into 3 trips of 233.3 µL"}]
    assert [c for c in calls if c[0] == "aspirate"] == [("aspirate", [3])] * 3
    assert setup.lab.state()["lh"]["labware"][-1]["wells"] == {"cuvette": 700.0}
    assert setup.world.contents("cuvette").volume_ul == pytest.approx(700, rel=0.02)  # 3 trips


def test_a_refused_batch_points_into_the_list_and_changes_nothing(filled: Rig) -> None:
    calls = record(filled)
    before, world = filled.snapshot(), truth(filled)
    # transfers 0–16 fine; 17 would overfill plate_1:B1 (200 + 100 + 100 > 360)
    moves = [("reservoir:A2", f"plate_2:{r}{c}", 10) for c in range(1, 3) for r in ROWS]
    moves += [("reservoir:A2", "plate_1:B1", 100)] * 2
    result = filled.call("lh_transfer", batch(moves))
    assert result.error["code"] == "interlock", result.error
    assert result.error["field"] == "/transfers/17/volume"
    assert "transfer 17" in result.error["message"] and "at most 60" in result.error["hint"]
    for bad, field in [
        ({"destination": "plate_1:Q1"}, "/transfers/3/destination"),
        ({"source": "plate_2:A5"}, "/transfers/3/volume"),  # an empty well
        ({"volume": ul(0.1)}, "/transfers/3/volume"),
    ]:
        arguments = batch(moves[:16])
        arguments["transfers"][3].update(bad)
        assert filled.call("lh_transfer", arguments).error["field"] == field
    mix = filled.call("lh_transfer", batch(moves[:16], mix=(3, 50)))  # 10 µL wells: no mix
    assert mix.error["field"] == "/mix_volume" and "transfer 0" in mix.error["message"]
    assert filled.snapshot() == before and truth(filled) == world and calls == []


def test_sequential_effects_count_in_the_dry_run(setup: Rig) -> None:
    chain = [("reservoir:A1", "plate_1:A1", 150), ("plate_1:A1", "plate_1:A2", 100)]
    assert setup.call("lh_transfer", batch(chain[::-1])).error["field"] == "/transfers/0/volume"
    done = setup.ok("lh_transfer", batch(chain))
    assert done["rounds"] == 2  # the second draws what the first filled
    wells = setup.lab.state()["lh"]["labware"][1]["wells"]
    assert wells == {"A1": 50.0, "A2": 100.0}


def test_a_well_left_below_its_dead_volume_is_noted(setup: Rig) -> None:
    done = setup.ok("lh_transfer", batch([("reservoir:A1", "plate_1:A1", 5)]))
    dead = [n for n in done["notes"] if "dead volume" in n["note"]]
    assert len(dead) == 1 and dead[0]["transfer"] == 0


def test_mounted_tips_transfer_with_no_tips_moved(setup: Rig) -> None:
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [2]})
    done = setup.ok(
        "lh_transfer", batch([("reservoir:A1", "plate_1:A1", 80)], tips="mounted", rack="")
    )
    assert done["tips_used"] == 0
    assert setup.lab.state()["lh"]["channels"][2]["tip"] is not None
    refused = setup.call("lh_transfer", batch([("reservoir:A1", "plate_1:A1", 80)], channels=[2]))
    assert refused.error["field"] == "/channels/0"


# -- the serial dilution ---------------------------------------------------------------------
def _nanomoles(lab: Lab, species: str) -> float:
    world = lab.shared["world"]
    backend = lab.instruments["lh"].plr.backend
    total = sum(world.contents(k).amounts.get(species, 0.0) for k in world.containers())
    for ch in range(backend.num_channels):
        tip = backend.tip_contents(ch)
        total += tip.amounts.get(species, 0.0) if tip is not None else 0.0
    return total


def test_a_96_well_two_fold_serial_dilution_in_three_calls() -> None:
    lab = Lab.virtual(seed=7)
    world = lab.shared["world"]
    moles = _nanomoles(lab, "tartrazine")
    calls: list[ToolResult] = []

    def call(arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append(result := lab.call("lh_transfer", arguments))
        assert result.ok, result.error
        return result.data or {}

    water = [("reservoir:A1", f"plate_1:{r}{c}", 100) for c in range(2, 13) for r in ROWS]
    call(batch(water, tips="reuse", rack="tips_1000ul"))
    call(batch([("reservoir:A2", f"plate_1:{r}1", 200) for r in ROWS], "reuse", "tips_1000ul"))
    steps = [(f"plate_1:{r}{c}", f"plate_1:{r}{c + 1}", 100) for c in range(1, 12) for r in ROWS]
    done = call(batch(steps, mix=(5, 100)))
    assert len(calls) == 3 <= 12
    assert done["rounds"] == 11 and done["tips_used"] == 88 and done["notes"] == []
    conc = np.array(
        [
            [world.contents(f"plate_1:{r}{c}").concentration("tartrazine") for c in range(1, 13)]
            for r in ROWS
        ]
    )
    ratios = (conc[:, 1:] / conc[:, :-1]).mean(axis=0)
    assert np.all(np.abs(ratios - 0.5) < 0.03), ratios
    assert np.all(np.abs(conc[:, 1:] / conc[:, :-1] - 0.5) < 0.03)
    assert conc[:, 0].mean() == pytest.approx(500e-6, rel=0.02)  # the stock, undiluted
    assert _nanomoles(lab, "tartrazine") == pytest.approx(moles, rel=1e-9)
    lab.close()


def test_the_same_seed_and_calls_give_the_same_world() -> None:
    def run() -> str:
        setup = rig(seed=3)
        moves = [("reservoir:A1", f"plate_1:{r}1", 150) for r in ROWS]
        setup.ok("lh_transfer", batch(moves, mix=(2, 50)))
        return truth(setup)

    assert run() == run()


# -- budgets ---------------------------------------------------------------------------------
def test_the_budget_counts_batches_and_items() -> None:
    usage = Usage()
    stocks = {"reservoir:A1"}
    data = {"tips_used": 3, "volume": ul(300)}
    moves = batch([("reservoir:A1", "plate_1:A1", 100), ("plate_1:A1", "plate_1:A2", 0.1e3)])
    moves["transfers"][1]["volume"] = {"value": 0.1, "unit": "milliliter"}
    usage.count("transfer", moves, ToolResult.success(data), stocks)
    assert (
        usage.tips == 3 and usage.reagent_ul == 100 and usage.wells == {"plate_1:A1", "plate_1:A2"}
    )
    items = {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(40)}]}
    usage.count("aspirate", items, ToolResult.success(items), stocks)
    assert usage.reagent_ul == 140


# -- property: a batch either runs or changes nothing ------------------------------------------
WELLS = ["reservoir:A1", "plate_1:A1", "plate_1:B1", "plate_1:A2", "plate_2:A1", "cuvette"]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    moves=st.lists(
        st.tuples(
            st.sampled_from(WELLS),
            st.sampled_from(WELLS),
            st.floats(0.5, 900, allow_nan=False).map(lambda v: round(v, 1)),
        ),
        min_size=1,
        max_size=12,
    ),
    tips=st.sampled_from(["new", "per_source", "reuse"]),
    mix=st.sampled_from([(0, 0.0), (2, 20.0), (1, 400.0)]),
    width=st.integers(1, 8),
)
def test_random_batches_run_or_change_nothing(
    moves: list[tuple[str, str, float]], tips: str, mix: tuple[int, float], width: int
) -> None:
    setup = rig(seed=1)
    setup.ok("lh_transfer", batch([("reservoir:A1", "plate_1:A1", 200)], rack="tips_1000ul"))
    before, world = setup.snapshot(), truth(setup)
    result = setup.call("lh_transfer", batch(moves, tips, mix=mix, channels=list(range(width))))
    if result.ok:
        assert result.data["transfers"] == len(moves)
        assert all(ch["tip"] is None for ch in setup.lab.state()["lh"]["channels"])
    else:
        assert result.error["code"] != "instrument_error", result.error
        assert result.error["field"] and result.error["hint"], result.error
        assert setup.snapshot() == before and truth(setup) == world
