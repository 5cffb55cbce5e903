"""The ``pipette`` family: instances named from a channel, a tip type and a test volume; held-out
structures only in ``test-ood``; the statement names the channel, the volume and the limit and
never the truth; the truth is what the channel delivers; the verdict is open as drawn;
refusals; determinism; the calibration (Z, evaporation, replicates), not only the rubric,
earning the outcome."""

from __future__ import annotations

import json

import numpy as np
import pytest
from leaks import without_data

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import played, split_instances
from labtools.simulators.balance.physics import z_factor
from labtools.simulators.families.pipette import LEVEL, SHARES, TIPS, limit_ul, parse
from labtools.simulators.pipetting import ISO_8655_2, TIP_CLASSES
from labtools.simulators.tasks.scripting import batch

FAMILY = "pipette"
MIDDLE = "pipette/3/channel3+tip10+10ul"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 8 * 3 * 2
    assert family.count() == 5 * 48
    cls = task_class(MIDDLE)
    assert cls.id == MIDDLE and cls.level.number == 3
    assert (cls.channel, cls.tip_ul, cls.volume_ul) == (3, 10.0, 10.0)
    assert task_class(MIDDLE) is cls
    assert parse("channel0+tip300+150ul") == (0, 300.0, 150.0)
    for bad in (
        "pipette/6/channel3+tip10+10ul",
        "pipette/1/channel8+tip10+10ul",
        "pipette/1/channel3+tip1000+1000ul",
        "pipette/1/channel3+tip10+1ul",
        "pipette/1/channel3",
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_part_meets_its_criteria(family) -> None:
    for name in family.structures():
        channel, tip, volume = parse(name)
        assert 0 <= channel < 8 and tip in TIP_CLASSES and volume / tip in SHARES
        # the limit is the tip's ISO 8655-2 row, the absolute µL at every set volume
        assert limit_ul(tip) == TIP_CLASSES[tip].nominal.systematic_ul
        assert limit_ul(tip) in {row.systematic_ul for row in ISO_8655_2.values()}
    assert TIPS == (10.0, 50.0, 300.0)


def test_the_out_of_distribution_split_holds_out_a_channel_and_a_pair(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert split_instances(family, "validation") == train == split_instances(family, "test-id")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    seen = [parse(n.structure) for n in train]
    assert all(ch != 7 and not (tip == 300.0 and v == 150.0) for ch, tip, v in seen)
    assert all(ch == 7 or (tip, v) == (300.0, 150.0) for ch, tip, v in map(parse, _names(ood)))
    # compositional: the 300 µL tips and the half volume each train, never together
    assert any(tip == 300.0 for _, tip, _ in seen) and any(v / t == 0.5 for _, t, v in seen)


def _names(instances) -> list[str]:
    return [i.structure for i in instances]


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, spans, noise = set(), set(), [], []
    for level in (1, 5):
        with Session(f"pipette/{level}/channel3+tip10+10ul", secret="w") as session:
            statements.add(without_data(session.reset(0)["task"]))
            budgets.add(json.dumps(session.task.budget.as_dict()))
            profile = session.lab.shared["world"].profile
            spans.append(profile["liquid_handler.channel_3.tip_10.beta"].prior.b)
            noise.append(profile["balance.XPR205.repeatability"].prior.scale)
    assert len(statements) == 1 and len(budgets) == 2
    assert spans == [LEVEL[1].span, LEVEL[5].span] and noise[1] > noise[0]


def test_the_statement_names_the_question_and_never_the_truth() -> None:
    with Session(MIDDLE, secret="leak") as session:
        statement = session.reset(4)["task"]
        task, lab = session.task, session.lab
        for text in ("channel 3", "10 µL tips", "tips_10ul", "set to 10 µL", "±0.12 µL"):
            assert text in statement, text
        assert "submit_pipette" in statement
        shown = statement + json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
        truth = task.truth(lab)["mean_ul"]
        for text in (f"{truth:.4g}", f"{truth:.5g}", f"{truth - 10.0:.3g}"):
            assert text not in shown, text


def test_the_truth_is_what_the_channel_delivers() -> None:
    """Thirty deliveries into the vessel (the world's contents, evaporation aside) average the
    truth; the balance reads them 0.4 % light (ISO 8655-6's Z at 25 °C)."""
    with Session("pipette/1/channel5+tip50+50ul", secret="truth") as session:
        session.reset(2)
        lab, task = session.lab, session.task
        world = lab.shared["world"]
        call = session.call_tool
        call("balance_tare", {"mode": "stable"}).unwrap()
        start = world.peek("weighing_vessel").volume_ul
        moves = [("reservoir:A1", "weighing_vessel", 50.0)] * 30
        call("lh_transfer", batch(moves, "reuse", tip_rack="tips_50ul", channels=[5])).unwrap()
        grams = call("balance_weigh", {"mode": "stable"}).unwrap()["mass"]["value"]
        delivered = (world.peek("weighing_vessel").volume_ul - start) / 30
        model = lab.instruments["lh"]
        assert model is not None
        sigma = 0.2  # µL: the 50 µL row's random limit, above every channel's
        assert abs(delivered - task.truth(lab)["mean_ul"]) < 4 * sigma / np.sqrt(30) + 0.01
        assert grams * 1000 * z_factor(25.0) / 30 == pytest.approx(delivered, abs=0.02)
        assert grams * 1000 / 30 < delivered - 0.15  # 1 mg is not 1 µL


@pytest.mark.parametrize("level", [1, 5])
def test_the_verdict_is_open_as_drawn(level: int) -> None:
    """The tested channel is within its limit for a share of seeds between 0.2 and 0.8."""
    within = []
    with Session(f"pipette/{level}/channel2+tip300+300ul", secret="open") as session:
        for seed in range(60):
            session.reset(seed)
            within.append(session.task.truth(session.lab)["within"])
    assert 0.2 <= float(np.mean(within)) <= 0.85


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session(MIDDLE, secret="refusal") as session:
        session.reset(0)
        world = session.lab.shared["world"]
        before = world.peek("weighing_vessel").volume_ul
        good = {
            "volume": {"value": 10.0, "unit": "microliter"},
            "uncertainty": {"value": 0.01, "unit": "microliter"},
            "within_probability": 0.5,
        }
        for field, value in (
            ("volume", {"value": -1.0, "unit": "microliter"}),
            ("volume", {"value": 1.0, "unit": "gram"}),
            ("uncertainty", "a little"),
            ("within_probability", 1.5),
            ("within_probability", None),
        ):
            result = session.call_tool("submit_pipette", {**good, field: value})
            assert not result.ok and result.error is not None, (field, value)
        assert not session.call_tool("submit_pipette", {}).ok
        assert session.task.submission is None and not session.done
        assert world.peek("weighing_vessel").volume_ul == before
        assert session.call_tool("submit_pipette", good).ok and session.done


def test_same_seed_same_calls_same_reward() -> None:
    instance = "pipette/4/channel1+tip50+25ul"
    with Session(instance, secret="determinism") as session:
        first = evaluate(instance, "expert", [4], k=1, session=session)
        again = evaluate(instance, "expert", [4], k=1, session=session)
    with Session(instance, secret="determinism") as session:
        fresh = evaluate(instance, "expert", [4], k=1, session=session)
    assert first == again == fresh
    with Session(instance, secret="determinism") as session:
        other = evaluate(instance, "expert", [5], k=1, session=session)
    assert other.mean_raw != first.mean_raw


@pytest.mark.parametrize("level", [1, 5])
def test_the_calibration_earns_the_outcome_not_only_the_rubric(family, level: int) -> None:
    """Seeds 0-11 over the level's training structures: the expert's process is complete; one
    delivery read without a tare and taken 1 mg = 1 µL earns, before the rubric, well under
    the expert's outcome."""
    instances = [str(i) for i in split_instances(family, "train") if i.level == level]
    outcome = {"expert": 0.0, "no_controls": 0.0}
    for seed in range(12):
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            expert = run_episode(session, "expert", seed)
            assert expert.components["process"] == 1.0
            outcome["expert"] += expert.components["outcome"]
            bare = run_episode(session, "no_controls", seed)
            assert bare.components["process"] == 0.0
            outcome["no_controls"] += bare.components["outcome"]
    assert outcome["no_controls"] < 0.65 * outcome["expert"], outcome
