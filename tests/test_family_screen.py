"""The ``screen`` family: instances named and built from a screen's size, decoy and prior share;
held-out parts only in ``test-ood``; the truth (who inhibits, the purity, inhibitor X's Ki at
work) in the world and never in what the agent sees; refusals; determinism; a verdict without
the deciding readings earning no more than the prior (the gamble)."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from labtools.session import Session
from labtools.session.agents import AGENTS
from labtools.session.evaluate import DEV_SECRET, evaluate
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import split_instances
from labtools.simulators.families.kinetics_parts import ABSORBER_MIN, overlap_at
from labtools.simulators.families.parts import HELD_OUT_SPECIES
from labtools.simulators.families.screen_parts import (
    COMPOUNDS,
    HELD_OUT_COMBINATIONS,
    LEVEL,
    PURITY,
    SHARES,
    SIZES,
    stock_molar,
)
from labtools.simulators.tasks.enzyme_kinetics import ENZYME, INHIBITOR
from labtools.simulators.world.kinetics import KineticsData

FAMILY = "screen"
INSTANCE = "screen/3/3+tartrazine+p75"
#: seeds the gambles are evaluated on
GAMBLE_SEEDS = list(range(12))


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 40
    assert family.count() == 5 * len(structures) == 200
    assert "1+tartrazine+p75" in structures  # compound_screen's own case
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level is LEVEL[3]
    assert (cls.compounds, cls.decoy, cls.share) == (COMPOUNDS[:3], "tartrazine", 0.75)
    assert task_class(INSTANCE) is cls  # built once
    name = InstanceName.parse("screen/5/4+fmn+p50")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "4+fmn+p50")
    for bad in (
        "screen/6/1+tartrazine+p75",  # no such level
        "screen/1/5+tartrazine+p75",  # five compounds
        "screen/1/1+brilliant_blue+p75",  # blue: nothing at 405 nm
        "screen/1/1+tartrazine+p25",  # no such share
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_part_meets_its_criteria() -> None:
    # inhibitor X inhibits alkaline phosphatase only: every screen is of that enzyme
    assert KineticsData.default().inhibitors[INHIBITOR].enzyme == ENZYME
    structures = load_family(FAMILY).structures()
    decoys = {s.split("+")[1] for s in structures}
    assert len(decoys) == 5
    for decoy in decoys:
        assert overlap_at(decoy, 405.0) >= ABSORBER_MIN
    assert {int(s.split("+")[0]) for s in structures} == set(SIZES)
    assert {int(s.split("+")[2][1:]) / 100 for s in structures} == set(SHARES)
    assert min(SHARES) >= 0.5 and 0.0 < PURITY[0] < PURITY[1] <= 1.0
    # harder levels: weaker screening levels, stronger decoys, a noisier reader, less budget
    levels = [LEVEL[n] for n in range(1, 6)]
    for easier, harder in itertools.pairwise(levels):
        assert harder.screen_molar < easier.screen_molar
        assert harder.decoy_od[0] > easier.decoy_od[0]
        assert harder.noise >= easier.noise
        assert harder.budget.tips < easier.budget.tips
        assert harder.budget.wells < easier.budget.wells
    low, high = KineticsData.default().inhibitors[INHIBITOR].ki_mm
    assert LEVEL[5].screen_molar < high * 1e-3 and LEVEL[1].screen_molar > low * 1e-3


def test_the_out_of_distribution_split_holds_out_a_decoy_and_a_combination(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    trained = {tuple(i.structure.split("+")[:2]) for i in train}
    for name in train:
        assert name.structure.split("+")[1] not in HELD_OUT_SPECIES
    assert any("fmn" in i.structure for i in ood)
    for decoy, size in HELD_OUT_COMBINATIONS:
        assert (str(size), decoy) not in trained
        assert any(d == decoy for _, d in trained) and any(n == str(size) for n, _ in trained)


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise, labels = set(), set(), set(), set()
    for level in (1, 5):
        with Session(f"screen/{level}/2+sunset_yellow+p50", secret="wording") as session:
            statements.add(session.reset(0)["task"])
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
            labels.add(session.call_tool("lh_get_deck", {}).unwrap()["labels"][COMPOUNDS[0]])
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}
    assert len(labels) == 2  # the screening strength follows the level


def test_the_statement_names_the_screen_and_tells_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        observation = session.reset(9)
        text = observation["task"]
        truth = session.task.truth(session.lab)
        shown = json.loads(json.dumps(session.call_tool("lh_get_deck", {}).unwrap()))
    for words in ("Tartrazine", "405 nm", "3 test compounds", "A6, A7, A8", "π = 0.75"):
        assert words in text
    assert "submit_screen" in text and "compound_1 is A6" in text
    labels = shown["labels"]
    assert labels[COMPOUNDS[0]] == labels[COMPOUNDS[1]].replace("2:", "1:")
    assert "purity not stated" in labels[COMPOUNDS[0]]
    assert COMPOUNDS[3] not in labels
    deck = json.dumps(shown)
    for value in truth.values():
        if not math.isfinite(value) or value in (0.0, 1.0):
            continue
        for figure in (f"{value:.3g}", f"{value * 1e3:.3g}", f"{value * 1e6:.3g}"):
            digits = len(figure.split("e")[0].replace(".", "").lstrip("-0"))
            assert digits < 3 or figure not in text + deck, figure


def test_the_truth_is_what_the_wells_run_on() -> None:
    with Session("screen/2/4+quinoline_yellow+p50", secret="truth") as session:
        seen = set()
        for seed in range(6):
            session.reset(seed)
            world = session.lab.shared["world"]
            truth = session.task.truth(session.lab)
            ki = world.kinetics.inhibition_at_work(INHIBITOR)["ki_molar"]
            labelled = stock_molar(LEVEL[2])
            for j, container in enumerate(COMPOUNDS):
                amounts = world.peek(container).amounts
                if truth[f"inhibits_{j}"]:
                    seen.add(True)
                    assert set(amounts) == {INHIBITOR}
                    purity = world.peek(container).concentration(INHIBITOR) / labelled
                    assert purity == pytest.approx(truth[f"purity_{j}"])
                    assert truth[f"ki_{j}"] == pytest.approx(ki / purity)
                else:
                    seen.add(False)
                    assert set(amounts) == {"quinoline_yellow"}
                    assert math.isnan(truth[f"ki_{j}"])
        assert seen == {True, False}
        session.reset(3)
        first = session.task.truth(session.lab)
        session.reset(3)
        assert session.task.truth(session.lab) == first


def _submission(p: float = 0.5, ki_mm: float = 0.5, n: int = 3) -> dict:
    names = [f"compound_{j + 1}" for j in range(n)]
    return {
        "inhibits": dict.fromkeys(names, p),
        "ki": {k: {"value": ki_mm, "unit": "millimolar"} for k in names},
    }


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(COMPOUNDS[0]).volume_ul
        missing = _submission()
        del missing["inhibits"]["compound_2"]
        for arguments in (
            _submission(p=1.5),
            _submission(p=-0.1),
            _submission(ki_mm=0.0),
            _submission(n=2),
            missing,
            {"inhibits": _submission()["inhibits"]},
        ):
            result = session.call_tool("submit_screen", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(COMPOUNDS[0]).volume_ul == before
        assert session.call_tool("submit_screen", _submission()).ok and session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [7], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    assert first == again == fresh


def test_the_expert_reads_what_decides_each_verdict_and_earns_it() -> None:
    """Over seeds 0-5 of a four-compound screen: every compound's confident verdict is scored in
    full (its three deciding readings were taken), on decoys and inhibitors alike."""
    seen = set()
    with Session("screen/3/4+malachite_green+p50", secret=DEV_SECRET) as session:
        for seed in range(6):
            session.reset(seed)
            session.task.expert(session)
            truth = session.task.truth(session.lab)
            reward = session.score()
            assert reward.components["process"] == 1.0
            mean = 0.0
            for j in range(4):
                y = truth[f"inhibits_{j}"]
                seen.add(y)
                p = session.task.submission["inhibits"][f"compound_{j + 1}"]
                assert abs(p - y) < 0.05  # colour decides the verdict
                mean += (1.0 - (p - y) ** 2) / 4
            assert reward.components["verdict_term"] == pytest.approx(mean)
    assert seen == {0.0, 1.0}


def _gamble(verdict: float):
    """A confident verdict on every compound without reading anything; Ki the screening level."""

    def agent(session: Session, seed: int) -> None:
        n = len(session.task.compounds)
        ki = session.task.level.screen_molar * 1e3
        session.call_tool("submit_screen", _submission(p=verdict, ki_mm=ki, n=n)).unwrap()

    return agent


@pytest.mark.parametrize("verdict", [0.0, 1.0])
def test_a_verdict_without_the_deciding_readings_earns_no_more_than_the_prior(verdict) -> None:
    with Session(INSTANCE, secret=DEV_SECRET) as session:
        for seed in range(6):
            session.reset(seed)
            _gamble(verdict)(session, seed)
            truth = session.task.truth(session.lab)
            share = session.task.share
            prior = [1.0 - (share - truth[f"inhibits_{j}"]) ** 2 for j in range(3)]
            right = [verdict == truth[f"inhibits_{j}"] for j in range(3)]
            expected = sum(v if r else 0.0 for v, r in zip(prior, right, strict=True)) / 3
            assert session.score().components["verdict_term"] == pytest.approx(expected)


@pytest.mark.parametrize("verdict", [0.0, 1.0])
@pytest.mark.parametrize("level", [1, 5])
def test_the_gamble_scores_at_most_0_2(monkeypatch: pytest.MonkeyPatch, verdict, level) -> None:
    """Every compound called confidently (a decoy, or an inhibitor) with no reading, on the
    training structures of two levels, seeds 0-11."""
    name = f"gamble_{verdict:g}"
    monkeypatch.setitem(AGENTS, name, _gamble(verdict))
    family = load_family(FAMILY)
    instances = [str(i) for i in split_instances(family, "train") if i.level == level]
    means = []
    for seed in GAMBLE_SEEDS:
        instance = instances[(seed * 7) % len(instances)]
        report = evaluate(instance, name, [seed], k=1, secret=DEV_SECRET)
        means.append(report.mean_normalized)
    assert sum(means) / len(means) <= 0.2, means
