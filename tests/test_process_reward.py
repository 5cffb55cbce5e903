"""Process-grounded reward: the journal detectors, the rubrics, and how the session combines
process with outcome (issue 10, §3)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labtools.session import Session, load_task, task_ids
from labtools.session.process import (
    Component,
    Episode,
    Rubric,
    analyse,
    blanks,
    bracketed,
    controls,
    in_range_share,
    levels,
    references,
    replicates,
    usable_reading,
    verified,
)
from labtools.simulators.tasks import rubrics
from labtools.simulators.tasks.rubrics import RUBRICS
from labtools.simulators.tasks.standard_curve import StandardCurve

WATER, STOCK, UNKNOWN = "reservoir:A1", "reservoir:A2", "reservoir:A10"


# -- scripted journals -------------------------------------------------------------------------
class Script:
    """A journal written by hand: transfers, reads, a reset record."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = [{"event": "reset", "task": "t"}]

    def call(self, tool: str, arguments: dict[str, Any], data: Any = None, ok: bool = True):
        seq = len(self.events)
        event = {"seq": seq, "tool": tool, "arguments": arguments, "ok": ok}
        event.update({"data": data or {}} if ok else {"error": {"code": "x"}})
        self.events.append(event)
        return self

    def move(self, *transfers: tuple[str, str, float]) -> Script:
        items = [{"source": s, "destination": d, "volume": f"{v} uL"} for s, d, v in transfers]
        return self.call("lh_transfer", {"transfers": items, "tip_rack": "tips_300ul"})

    def read(self, values: dict[str, float], *, nm: float = 426.0, plate: str = "plate_1"):
        data = {
            "plate": plate,
            "wavelength": {"value": nm, "unit": "nanometer"},
            "values": {w: v for w, v in values.items() if math.isfinite(v)},
            "saturated": [w for w, v in values.items() if not math.isfinite(v)],
        }
        return self.call("reader_read_absorbance", {"plate": plate, "wells": list(values)}, data)

    def episode(self, **kwargs: Any) -> Episode:
        return analyse(self.events, **kwargs)


def _curve(script: Script | None = None) -> Script:
    """Standards at 20/40/80 µL of stock in 200 µL, a water blank, the unknown in triplicate."""
    script = script or Script()
    wells = {"A1": 20.0, "A2": 40.0, "A3": 80.0}
    script.move(*[(WATER, f"plate_1:{w}", 200 - v) for w, v in wells.items()])
    script.move(*[(STOCK, f"plate_1:{w}", v) for w, v in wells.items()])
    script.move((WATER, "plate_1:A4", 200.0))
    script.move(*[(UNKNOWN, f"plate_1:B{i}", 100.0) for i in (1, 2, 3)])
    return script.read(
        {"A1": 0.3, "A2": 0.6, "A3": 1.2, "A4": 0.04, "B1": 0.8, "B2": 0.81, "B3": 0.79}
    )


def test_contents_follow_transfers_aspirates_and_dispenses() -> None:
    script = Script().move((WATER, "plate_1:A1", 150.0), (STOCK, "plate_1:A1", 50.0))
    script.move(("plate_1:A1", "plate_1:A2", 100.0), (WATER, "plate_1:A2", 100.0))
    item = [{"channel": 0, "well": "plate_1:A2", "volume": {"value": 40, "unit": "microliter"}}]
    script.call("lh_aspirate", {"items": item})
    script.call("lh_dispense", {"items": [{**item[0], "well": "plate_1:A3"}]})
    script.move((UNKNOWN, "plate_1:A9", 50.0))
    script.call(
        "lh_transfer",
        {"transfers": [{"source": UNKNOWN, "destination": "plate_1:A9", "volume": "50 uL"}]},
        ok=False,
    )  # refused
    episode = script.episode()
    assert episode.contents["plate_1:A1"] == pytest.approx({WATER: 75.0, STOCK: 25.0})
    assert episode.contents["plate_1:A2"] == pytest.approx({WATER: 140.0, STOCK: 20.0})
    assert episode.contents["plate_1:A3"] == pytest.approx({WATER: 35.0, STOCK: 5.0})
    assert episode.contents["plate_1:A9"] == pytest.approx({UNKNOWN: 50.0})


def test_a_reading_keeps_what_the_well_held_then() -> None:
    script = Script().move((WATER, "plate_1:A1", 100.0)).read({"A1": 0.04})
    script.move((STOCK, "plate_1:A1", 100.0)).read({"A1": 0.9})
    first, second = script.episode().readings
    assert first.only([WATER]) and not first.holds([STOCK])
    assert second.fraction(STOCK) == pytest.approx(0.5) and second.seq > first.seq


def test_only_the_last_episode_counts() -> None:
    script = _curve()
    script.events.append({"event": "reset", "task": "t"})
    assert script.episode().readings == ()


def test_blanks() -> None:
    assert blanks(_curve().episode(), [UNKNOWN], [WATER]) == 1.0
    bare = Script().move((UNKNOWN, "plate_1:A1", 100.0)).read({"A1": 0.5})
    assert blanks(bare.episode(), [UNKNOWN], [WATER]) == 0.0
    # an empty well read on the same plate is a blank (the plate's own OD); on another, not
    assert blanks(bare.read({"H12": 0.04}).episode(), [UNKNOWN], [WATER]) == 1.0
    assert blanks(bare.episode(), [UNKNOWN], [WATER], empty=False) == 0.0
    other = Script().move((UNKNOWN, "plate_1:A1", 100.0)).read({"A1": 0.5})
    other.read({"A1": 0.04}, plate="plate_2")
    assert blanks(other.episode(), [UNKNOWN], [WATER]) == 0.0


def test_controls() -> None:
    script = Script().move((STOCK, "plate_1:A1", 100.0), (WATER, "plate_1:A1", 100.0))
    assert controls(script.episode(), holds=[STOCK], lacks=[UNKNOWN]) == 0.0  # never read
    script.read({"A1": 0.5})
    assert controls(script.episode(), holds=[STOCK], lacks=[UNKNOWN]) == 1.0
    episode = Script().move((STOCK, "plate_1:A1", 100.0), (UNKNOWN, "plate_1:A1", 10.0))
    assert controls(episode.read({"A1": 0.5}).episode(), [STOCK], [UNKNOWN]) == 0.0


def test_replicates_count_wells_not_repeat_readings() -> None:
    assert replicates(_curve().episode(), [UNKNOWN], copies=3) == 1.0
    one = Script().move((UNKNOWN, "plate_1:A1", 100.0)).read({"A1": 0.5}).read({"A1": 0.5})
    assert replicates(one.episode(), [UNKNOWN], copies=3) == 0.0
    two = one.move((UNKNOWN, "plate_1:A2", 100.0)).read({"A2": 0.5})
    assert replicates(two.episode(), [UNKNOWN], copies=3) == 0.5
    # conditions are shares, not volumes: 50 + 50 µL and 100 + 100 µL are replicates
    diluted = Script().move((UNKNOWN, "plate_1:A1", 50.0), (WATER, "plate_1:A1", 50.0))
    diluted.move((UNKNOWN, "plate_1:A2", 100.0), (WATER, "plate_1:A2", 100.0))
    assert replicates(diluted.read({"A1": 0.4, "A2": 0.4}).episode(), [UNKNOWN], copies=2) == 1
    assert replicates(two.episode(), [UNKNOWN], copies=2, conditions=2) == 0.5
    with pytest.raises(ValueError):
        replicates(two.episode(), [UNKNOWN], copies=1)


def test_readings_in_the_accurate_range() -> None:
    high = Script().move((UNKNOWN, "plate_1:A1", 200.0)).read({"A1": 2.6})
    assert usable_reading(high.episode(), [UNKNOWN]) == 0.0
    saturated = Script().move((UNKNOWN, "plate_1:A1", 200.0)).read({"A1": math.inf})
    assert usable_reading(saturated.episode(), [UNKNOWN]) == 0.0
    assert in_range_share(saturated.episode(), [UNKNOWN]) == 0.0
    over = Script().move((UNKNOWN, "plate_1:A1", 200.0))
    over.call(
        "reader_read_absorbance",
        {"plate": "plate_1", "wells": ["A1"]},
        {
            "plate": "plate_1",
            "wavelength": {"value": 426.0, "unit": "nanometer"},
            "values": {},
            "saturated": [],
            "over_range": ["A1"],
        },
    )
    (reading,) = over.episode().of([UNKNOWN])
    assert reading.peak == math.inf  # past the reader's range: read, and above any range
    assert usable_reading(over.episode(), [UNKNOWN]) == 0.0
    diluted = high.move((UNKNOWN, "plate_1:A2", 20.0), (WATER, "plate_1:A2", 180.0))
    episode = diluted.read({"A2": 0.5}).episode()
    assert usable_reading(episode, [UNKNOWN]) == 1.0
    assert in_range_share(episode, [UNKNOWN]) == 0.5  # A1 never read in range


def test_kinetic_readings_need_points_in_range() -> None:
    script = Script().move((STOCK, "plate_1:A1", 100.0), (STOCK, "plate_1:A2", 100.0))
    data = {
        "plate": "plate_1",
        "wavelength": {"value": 405, "unit": "nanometer"},
        "values": {"A1": [0.1, 0.5, 1.0, 1.5], "A2": [1.9, None, None, None]},
        "saturated": [],
        "data": "reader/1",
    }
    script.call("reader_read_absorbance_kinetic", {"plate": "plate_1"}, data)
    episode = script.episode()
    assert in_range_share(episode, [STOCK], (0.0, 2.0), points=3, modes=("kinetic",)) == 0.5
    # values too many to come inline are fetched through the data handle
    data = {**data, "values": {}}
    script = Script().move((STOCK, "plate_1:A1", 100.0))
    script.call("reader_read_absorbance_kinetic", {"plate": "plate_1"}, data)
    fetched = script.episode(resolve=lambda handle: {"absorbance": {"A1": [0.1, 0.2, 0.3]}})
    assert fetched.readings[0].values == (0.1, 0.2, 0.3)
    assert script.episode().readings == ()  # without it, nothing to pair


def test_levels_and_bracketing() -> None:
    episode = _curve().episode()
    assert levels(episode, STOCK, count=3, lacks=[UNKNOWN]) == 1.0
    assert levels(episode, STOCK, count=6, lacks=[UNKNOWN]) == 0.5
    assert bracketed(episode, [UNKNOWN], STOCK) == 1.0
    above = _curve().move((UNKNOWN, "plate_1:C1", 200.0)).read({"C1": 1.6}).episode()
    assert bracketed(above, [UNKNOWN], STOCK) == 1.0  # B1–B3 still lie inside
    only_above = Script().move((STOCK, "plate_1:A1", 10.0), (WATER, "plate_1:A1", 190.0))
    only_above.move((UNKNOWN, "plate_1:B1", 200.0))
    episode = only_above.read({"A1": 0.2, "B1": 1.5}).episode()
    assert bracketed(episode, [UNKNOWN], STOCK) == 0.0
    # standards read at another wavelength bracket nothing
    other = Script().move((STOCK, "plate_1:A1", 10.0), (STOCK, "plate_1:A2", 100.0))
    other.read({"A1": 0.2, "A2": 2.0}, nm=500).move((UNKNOWN, "plate_1:B1", 100.0))
    assert bracketed(other.read({"B1": 1.0}).episode(), [UNKNOWN], STOCK) == 0.0


def test_references_and_verified() -> None:
    script = Script().move((STOCK, "plate_1:A1", 20.0), (WATER, "plate_1:A1", 180.0))
    script.read({"A1": 0.7})
    script.move((STOCK, "plate_1:A2", 20.0), (UNKNOWN, "plate_1:A2", 20.0))
    assert references(script.episode(), [STOCK, UNKNOWN], [WATER]) == 0.5
    assert verified(script.episode(), "plate_1:A2") == 0.0
    script.read({"A2": 0.9})
    assert verified(script.episode(), "plate_1:A2") == 1.0
    script.move((WATER, "plate_1:A2", 10.0))  # changed after its reading
    assert verified(script.episode(), "plate_1:A2") == 0.0
    dark = Script().move((STOCK, "plate_1:A1", 200.0)).read({"A1": 3.1})
    assert references(dark.episode(), [STOCK], [WATER]) == 1.0
    assert references(dark.episode(), [STOCK], [WATER], accurate=True) == 0.0


# -- rubrics and their combination -------------------------------------------------------------
def _rubric(value: float, weight: float = 0.2) -> Rubric:
    return Rubric((Component("x", 1.0, lambda e: value, "constant"),), weight=weight)


@given(
    outcome=st.floats(0.0, 1.0),
    value=st.floats(-10.0, 10.0),
    weight=st.floats(0.0, 1.0),
)
def test_no_component_pushes_raw_outside_0_1(outcome: float, value: float, weight: float):
    rubric = _rubric(value, weight)
    process = rubric.score(Episode((), {}, {}))["process"]
    raw = rubric.combine(outcome, process)
    assert 0.0 <= process <= 1.0
    assert outcome * (1.0 - weight) - 1e-12 <= raw <= outcome + 1e-12  # costs at most w
    assert rubric.combine(0.0, 1.0) == 0.0  # a perfect process never rescues a wrong answer


def test_rubrics_refuse_bad_weights_and_nan_components() -> None:
    with pytest.raises(ValueError):
        _rubric(1.0, weight=1.5)
    with pytest.raises(ValueError):
        Rubric((Component("x", 0.0, lambda e: 1.0, ""),))
    with pytest.raises(ValueError, match="NaN"):
        _rubric(math.nan).score(Episode((), {}, {}))


def test_every_task_has_a_rubric_whose_weights_add_up_to_one() -> None:
    from labtools.session.registry import task_class

    declared = {task: task_class(task).rubric for task in task_ids()}
    assert all(rubric is not None for rubric in declared.values()), declared
    assert all(declared[task] is rubric for task, rubric in RUBRICS.items())
    for rubric in declared.values():
        assert rubric is not None
        assert math.isclose(sum(c.weight for c in rubric.components), 1.0)
        # 0.2, or up to 0.7 where a task's experiment without controls needs it to score at
        # most half (tests/test_shortcuts.py)
        assert 0.0 < rubric.weight <= 0.7 and rubric.note
        assert len({c.name for c in rubric.components}) == len(rubric.components)


def test_the_rubrics_name_the_tasks_own_containers() -> None:
    from labtools.simulators.tasks import (
        colour_matching,
        dye_quantification,
        indicator_pka,
        standard_curve,
    )

    assert rubrics.SAMPLE == standard_curve.SAMPLE == dye_quantification.SAMPLE
    assert rubrics.WATER == dye_quantification.WATER == colour_matching.WATER
    assert tuple(dye_quantification.STANDARDS.values()) == rubrics.DYE_STOCKS
    assert tuple(colour_matching.STOCKS.values()) == rubrics.DYE_STOCKS
    assert rubrics.INDICATOR == indicator_pka.INDICATOR


# -- sessions ----------------------------------------------------------------------------------
class Curve(StandardCurve):
    """The standard-curve task with its rubric (until the task class declares it)."""

    rubric = RUBRICS["standard_curve"]


@pytest.fixture(scope="module")
def curve() -> Iterator[Session]:
    with Session(Curve(), secret="process-reward") as session:
        yield session


def _call(session: Session, name: str, **arguments: Any) -> dict[str, Any]:
    return session.call_tool(name, arguments).unwrap()


def _ul(value: float) -> dict[str, Any]:
    return {"value": value, "unit": "microliter"}


def _transfer(session: Session, *moves: tuple[str, str, float]) -> None:
    transfers = [{"source": s, "destination": d, "volume": _ul(v)} for s, d, v in moves]
    options = {"tip_rack": "tips_300ul", "tips": "new", "channels": [], "mix_cycles": 0}
    _call(session, "lh_transfer", transfers=transfers, mix_volume=_ul(0.0), **options)


def _careful(session: Session) -> None:
    """A water blank, six standards and the unknown 1:10 in triplicate, read at 426 nm."""
    standards = {f"A{i + 1}": v for i, v in enumerate((2.0, 4.0, 8.0, 16.0, 32.0, 64.0))}
    _transfer(session, *[(WATER, f"plate_1:{w}", 200.0 - v) for w, v in standards.items()])
    _transfer(session, *[(STOCK, f"plate_1:{w}", v) for w, v in standards.items()])
    _transfer(session, (WATER, "plate_1:A7", 200.0))
    unknown = [f"B{i}" for i in (1, 2, 3)]
    _transfer(session, *[(WATER, f"plate_1:{w}", 180.0) for w in unknown])
    _transfer(session, *[(UNKNOWN, f"plate_1:{w}", 20.0) for w in unknown])
    _call(session, "lh_move_plate", plate="plate_1", destination="reader")
    wells = [*standards, "A7", *unknown]
    _call(
        session,
        "reader_read_absorbance",
        plate="plate_1",
        wells=wells,
        wavelength={"value": 426, "unit": "nanometer"},
    )


def _careless(session: Session) -> None:
    """The unknown 1:10 in one well, read once: no blank, no standards, no replicate."""
    _transfer(session, (WATER, "plate_1:B1", 180.0), (UNKNOWN, "plate_1:B1", 20.0))
    _call(session, "lh_move_plate", plate="plate_1", destination="reader")
    _call(
        session,
        "reader_read_absorbance",
        plate="plate_1",
        wells=["B1"],
        wavelength={"value": 426, "unit": "nanometer"},
    )


def _episode(session: Session, protocol, answer: float, sd: float):
    session.reset(11)
    protocol(session)
    truth = session.lab.shared["world"].hidden_truth()["task/standard_curve"]
    concentration = truth * answer
    _call(
        session,
        "submit_standard_curve",
        concentration={"value": concentration, "unit": "micromolar"},
        uncertainty={"value": truth * sd, "unit": "micromolar"},
    )
    return session.score()


def test_controls_and_an_honest_interval_score_higher_for_the_same_answer(curve) -> None:
    """The issue's test: same seed, same secret, same concentration; one agent with blanks,
    standards, replicates and an honest interval, one with none of them and no interval."""
    careful = _episode(curve, _careful, answer=1.03, sd=0.03)
    careless = _episode(curve, _careless, answer=1.03, sd=0.0)
    assert careful.components["process"] > careless.components["process"]
    assert careful.raw > careless.raw and careful.total > careless.total
    for name in ("blank", "replicates", "levels", "bracketed"):
        assert careful.components[f"process/{name}"] == 1.0
        assert careless.components[f"process/{name}"] == 0.0


def test_the_process_alone_separates_equal_submissions_by_at_most_its_weight(curve) -> None:
    careful = _episode(curve, _careful, answer=1.03, sd=0.03)
    careless = _episode(curve, _careless, answer=1.03, sd=0.03)
    outcome = careful.components["outcome"]
    assert outcome == careless.components["outcome"]  # the same answer, scored alike
    assert careless.raw < careful.raw <= outcome
    assert careless.raw >= outcome * (1.0 - Curve.rubric.weight)
    assert all(0.0 <= v <= 1.0 for k, v in careful.components.items() if k.startswith("process"))


def test_a_wrong_answer_stays_wrong_however_careful(curve) -> None:
    wrong = _episode(curve, _careful, answer=3.0, sd=0.01)
    assert wrong.components["process"] > 0.5 and wrong.raw < 1e-6


def test_an_unsubmitted_episode_still_scores_zero(curve) -> None:
    curve.reset(12)
    _careful(curve)
    reward = curve.score()
    assert not curve.done
    assert reward.raw == 0.0 and reward.total == 0.0 and not reward.success
    assert not any(k.startswith("process") for k in reward.components)


def test_a_task_without_a_rubric_scores_its_outcome_alone(monkeypatch) -> None:
    from labtools.simulators.tasks.standard_curve import StandardCurve

    monkeypatch.setattr(StandardCurve, "rubric", None)
    with Session("standard_curve", secret="process-reward") as plain:
        reward = _episode(plain, _careful, answer=1.03, sd=0.03)
    assert "process" not in reward.components and "outcome" not in reward.components


def test_the_experts_keep_a_sound_process() -> None:
    """The task's expert, with the rubric, loses little or nothing to the process."""
    with Session(Curve(), secret="process-reward") as session:
        session.reset(3)
        session.task.expert(session)
        reward = session.score()
    assert reward.components["process"] == 1.0
    assert reward.raw == pytest.approx(reward.components["outcome"])


#: the least process each task's expert keeps on seed 3 (what it leaves out, if anything)
EXPERT_PROCESS = {
    "colour_matching": 0.65,  # its last top-up goes unread
    "dye_quantification": 0.8,  # the sample in one well
    "standard_curve": 1.0,
    "indicator_pka": 1.0,
    "enzyme_kinetics": 1.0,
    "enzyme_inhibition": 0.85,  # one row per inhibitor level: no replicates
}


@pytest.mark.parametrize("task_id", sorted(RUBRICS))
def test_each_rubric_rewards_the_expert_over_the_naive_protocol(task_id: str) -> None:
    task = load_task(task_id)
    task.rubric = RUBRICS[task_id]  # as the task class will declare it
    with Session(task, secret="process-reward") as session:
        process = {}
        for agent in ("expert", "naive"):
            session.reset(3)
            getattr(session.task, agent)(session)
            reward = session.score()
            process[agent] = reward.components["process"]
            assert 0.0 <= reward.raw <= reward.components["outcome"] <= 1.0
    assert process["expert"] >= EXPERT_PROCESS[task_id] - 1e-9
    assert process["naive"] < process["expert"]
