"""The ``stability`` family: panels of candidates named and built from the analytes (the
hand-written task's azo dyes among them), held-out species only in ``test-ood``; the truth
(which candidate, how much is left, each lot's content) in the world and never in the
statement or on the deck; the hand-written task's outcome, its refusals, determinism, and
the expert's dilutions."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from labtools.session import Session
from labtools.session.evaluate import evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import split_instances
from labtools.simulators.families.mixture import ALIKE_MAX
from labtools.simulators.families.parts import (
    ANALYTES,
    HELD_OUT_PAIRS,
    HELD_OUT_SPECIES,
    alike,
    analyte,
)
from labtools.simulators.families.stability_expert import LEAST_UL, SPARE_UL, dilution
from labtools.simulators.families.stability_parts import (
    AZO,
    CONTENT_SD,
    CONTENT_TRUNCATE,
    LEVEL,
    SIZES,
    THRESHOLD,
    label_um,
)
from labtools.simulators.families.task import SAMPLE, STANDARDS, WATER
from labtools.simulators.tasks.dye_stability import LABEL_UM, RETAINED
from labtools.simulators.tasks.scripting import nominal_path_cm

FAMILY = "stability"
PANEL = "tartrazine+sunset_yellow+quinoline_yellow"
INSTANCE = f"stability/3/{PANEL}"
MICROMOLAR = "micromolar"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def _um(value: float) -> dict[str, object]:
    return {"value": value, "unit": MICROMOLAR}


def test_instances_are_named_and_built_from_panels(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 54
    assert family.count() == 5 * len(structures) == 270
    assert structures[0] == "+".join(AZO)
    assert {len(s.split("+")) for s in structures} == set(SIZES)
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level.number == 3 and task_class(INSTANCE) is cls
    assert cls.candidates == ("tartrazine", "sunset_yellow", "quinoline_yellow")
    name = InstanceName.parse(f"stability/5/{PANEL}")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, PANEL)
    for bad in ("stability/6/" + PANEL, "stability/2/tartrazine+nadh", "stability/2/x"):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_a_panels_candidates_are_told_apart_in_analytes_order(family) -> None:
    for structure in family.structures():
        keys = structure.split("+")
        assert keys == sorted(keys, key=ANALYTES.index)
        assert all(alike(a, b) <= ALIKE_MAX for a, b in itertools.combinations(keys, 2))


def test_held_out_species_and_pairs_are_only_in_test_ood(family) -> None:
    ood = {i.structure for i in split_instances(family, "test-ood")}
    train = {i.structure for i in split_instances(family, "train")}
    assert ood and train and not ood & train
    assert ood | train == set(family.structures())
    for structure in family.structures():
        keys = set(structure.split("+"))
        kinds = {analyte(k).kind for k in keys}
        expected = bool(HELD_OUT_SPECIES & keys) or any(p <= kinds for p in HELD_OUT_PAIRS)
        assert family.held_out(structure) == expected
    for structure in train:
        assert not HELD_OUT_SPECIES & set(structure.split("+"))
    assert "+".join(AZO) in ood  # allura red is held out


def test_the_levels_raise_the_label_and_near_the_threshold(family) -> None:
    labels = [LEVEL[n].label_od for n in (1, 2, 3, 4, 5)]
    assert labels == sorted(labels) and labels[0] > 2.0  # every label needs a dilution
    for n in (1, 2, 3, 4, 5):
        low, high = LEVEL[n].retained
        assert 0.0 < low < high < THRESHOLD
    highs = [LEVEL[n].retained[1] for n in (1, 2, 3, 4, 5)]
    assert highs == sorted(highs)
    budgets = [LEVEL[n].budget for n in (1, 2, 3, 4, 5)]
    assert [b.tips for b in budgets] == sorted((b.tips for b in budgets), reverse=True)
    assert [LEVEL[n].noise for n in (1, 2, 3, 4, 5)] == sorted(LEVEL[n].noise for n in LEVEL)


def test_level_1_of_the_azo_dyes_is_the_hand_written_task() -> None:
    cls = task_class("stability/1/" + "+".join(AZO))
    assert cls.label_um == LABEL_UM and cls.level.retained == RETAINED
    for n in (2, 3, 4, 5):
        assert task_class(f"stability/{n}/" + "+".join(AZO)).label_um > LABEL_UM


def test_a_label_is_a_round_figure_that_reads_the_levels_od(family) -> None:
    keys = PANEL.split("+")
    for n in (1, 5):
        label = label_um(LEVEL[n], keys)
        assert label == float(f"{label:.2g}")
        mean = math.exp(sum(math.log(analyte(k).epsilon) for k in keys) / len(keys))
        od = label * 1e-6 * mean * nominal_path_cm(200.0)
        assert od == pytest.approx(LEVEL[n].label_od, rel=0.05)


def test_the_statement_names_the_candidates_and_tells_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        statement = session.reset(9)["task"]
        deck = session.call_tool("lh_get_deck", {}).unwrap()
        truth = session.task.truth(session.lab)
        for key in session.task.candidates:
            assert key in statement and analyte(key).name in statement
        for container in (SAMPLE, WATER, *STANDARDS[:3]):
            assert container in statement
        assert "submit_stability" in statement and f"{THRESHOLD:.0%}" in statement
        label = deck["labels"][SAMPLE]
        assert label == f"stock, made up at {session.task.label_um:g} µM"
        assert f"{session.task.label_um:g}" not in statement  # the label is on the deck only
        shown = statement + json.dumps(deck)
        for text in (f"{truth['micromolar']:.3g}", f"{truth['micromolar']:.4g}"):
            assert text not in shown
        numbers = [truth["made"], truth["retained"], *truth["content"].values()]
        for value in (v for v in numbers if v != 1.0):  # an intact stock retains all of it
            assert f"{value:.5g}" not in shown
        assert truth["candidate"] not in label


def test_the_statement_is_the_same_at_every_level() -> None:
    statements = set()
    for n in (1, 3, 5):
        with Session(f"stability/{n}/{PANEL}", secret="wording") as session:
            statements.add(session.reset(0)["task"])
    assert len(statements) == 1


def test_the_truth_is_drawn_from_the_stated_spreads() -> None:
    with Session(INSTANCE, secret="spreads") as session:
        faded, contents = 0, []
        for seed in range(40):
            session.reset(seed)
            truth = session.task.truth(session.lab)
            assert truth["candidate"] in session.task.candidates
            if truth["retained"] < 1.0:
                faded += 1
                low, high = LEVEL[3].retained
                assert low <= truth["retained"] <= high
            assert truth["micromolar"] == pytest.approx(
                session.task.label_um * truth["made"] * truth["retained"]
            )
            contents += list(truth["content"].values())
        assert 10 < faded < 35
        assert all(abs(c - 1.0) <= CONTENT_SD * CONTENT_TRUNCATE for c in contents)
        assert len({round(c, 6) for c in contents}) == len(contents)


def test_the_stock_and_its_standard_share_the_lot() -> None:
    """A standard read beside the stock calibrates the lot's content; the library's ε does
    not."""
    with Session(INSTANCE, secret="lot") as session:
        session.reset(3)
        truth = session.task.truth(session.lab)
        key = truth["candidate"]
        world = session.lab.shared["world"]
        peak = analyte(key).peak_nm
        drawn = float(world.species[key].absorptivity(peak))
        library = analyte(key).epsilon
        batch = world.hidden_truth().get(f"batch/{key}", (1.0, 0.0))
        assert drawn / library == pytest.approx(truth["content"][key] * batch[0], rel=0.02)
        stock = world.peek(SAMPLE)
        assert stock.amounts[key] / stock.volume_ul * 1e3 == pytest.approx(truth["micromolar"])


@pytest.mark.parametrize(
    "arguments",
    [
        {"analyte": "nadh", "concentration": _um(100.0), "degraded": 0.5},  # not a candidate
        {"analyte": "tartrazine", "concentration": _um(100.0), "degraded": 1.5},
        {"analyte": "tartrazine", "concentration": _um(-1.0), "degraded": 0.5},
        {"analyte": "tartrazine", "concentration": {"value": 1, "unit": "nm"}, "degraded": 0.5},
        {"analyte": "tartrazine", "concentration": _um(100.0)},  # no verdict
        {"analyte": "tartrazine", "concentration": "100 µM", "degraded": 0.5},
    ],
)
def test_a_bad_submission_is_refused_and_changes_nothing(arguments) -> None:
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(SAMPLE).volume_ul
        result = session.call_tool("submit_stability", arguments)
        assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(SAMPLE).volume_ul == before
        good = {"analyte": "tartrazine", "concentration": _um(100.0), "degraded": 0.5}
        assert session.call_tool("submit_stability", good).ok


def test_the_outcome_is_the_hand_written_tasks() -> None:
    with Session(INSTANCE, secret="score") as session:
        session.reset(2)
        truth = session.task.truth(session.lab)
        right, true_um = truth["candidate"], truth["micromolar"]
        y = float(true_um < THRESHOLD * session.task.label_um)
        session.call_tool(
            "submit_stability",
            {"analyte": right, "concentration": _um(true_um * 1.1), "degraded": 0.3},
        ).unwrap()
        scored = session.task.score(session.lab)
        assert scored["identity"] == 1.0
        assert scored["verdict_term"] == pytest.approx(1.0 - (0.3 - y) ** 2)
        assert scored["accuracy"] == pytest.approx(math.exp(-math.log(1.1) / 0.1), rel=1e-4)
    with Session(INSTANCE, secret="score") as session:
        session.reset(2)
        wrong = next(k for k in session.task.candidates if k != right)
        session.call_tool(
            "submit_stability", {"analyte": wrong, "concentration": _um(true_um), "degraded": y}
        ).unwrap()
        assert session.task.score(session.lab)["raw"] == 0.0


def test_same_seed_same_calls_same_reward() -> None:
    instance = f"stability/4/{PANEL}"
    with Session(instance, secret="determinism") as session:
        first = evaluate(instance, "expert", [5], k=1, session=session)
        again = evaluate(instance, "expert", [5], k=1, session=session)
    with Session(instance, secret="determinism") as session:
        fresh = evaluate(instance, "expert", [5], k=1, session=session)
    assert first == again == fresh


def test_the_experiment_without_controls_misses_by_the_lots_content() -> None:
    """The library's ε over the nominal path is off by the lot's content; the expert's
    standard is not."""
    expert, uncalibrated = [], []
    with Session(f"stability/2/{PANEL}", secret="controls") as session:
        for seed in range(8):
            for agent, errors in (("expert", expert), ("no_controls", uncalibrated)):
                run_episode(session, agent, seed)
                truth = session.task.truth(session.lab)
                found = session.task.submission["micromolar"]
                errors.append(abs(math.log(found / truth["micromolar"])))
    assert max(expert) < 0.05
    assert sum(uncalibrated) / len(uncalibrated) > 2 * sum(expert) / len(expert)


@pytest.mark.parametrize("neat_od", [0.5, 1.5, 8.0, 40.0, 150.0, 900.0, 3000.0])
def test_the_expert_dilutes_in_steps_it_can_pipette(neat_od: float) -> None:
    wells = ["plate_1:B1", "plate_1:B2", "plate_1:B3"]
    spares = ["plate_1:D1", "plate_1:D2", "plate_1:D3"]
    stages, factor = dilution(SAMPLE, WATER, neat_od, wells, spares, target=0.8)
    assert neat_od / factor == pytest.approx(0.8, rel=0.05) or factor == 1.0
    last = stages[-1]
    assert {w for _, w, _ in last} == set(wells)
    for source, _, volume in itertools.chain.from_iterable(stages[1:]):
        assert volume >= LEAST_UL or (source == SAMPLE and volume == 200.0)
        drawn = sum(v for s, _, v in itertools.chain.from_iterable(stages) if s == source)
        assert source not in spares or drawn <= SPARE_UL
