"""The ``inhibition`` family: instances named and built from an enzyme-substrate pair, an
inhibitor and a coloured absorber; held-out parts only in ``test-ood``; the truth (the
mechanism, Ki, Km, the lot's activity) in the world and never in what the agent sees; the
mechanism drawn as the package says; refusals; determinism; the series earning the outcome."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import played, split_instances
from labtools.simulators.families.inhibition import INHIBITOR, STOCKS
from labtools.simulators.families.inhibition_parts import (
    HELD_OUT_COMBINATIONS,
    INHIBITOR_MAX_UL,
    LEVEL,
    PUBLISHED_SHARE,
    inhibitor,
    inhibitor_labels,
    inhibitors,
)
from labtools.simulators.families.kinetics import BUFFER, ENZYME, STANDARD, SUBSTRATE
from labtools.simulators.families.kinetics_parts import PAIRS, WELL_UL, absorbers, pair
from labtools.simulators.families.parts import HELD_OUT_SPECIES
from labtools.simulators.world import SpeciesLibrary
from labtools.simulators.world.kinetics import MECHANISMS, KineticsData

FAMILY = "inhibition"
INSTANCE = "inhibition/3/alp+l_phenylalanine+sunset_yellow"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    assert family.members == ("enzyme_inhibition",)
    structures = family.structures()
    plain = [f"{p}+{i}" for p in PAIRS for i in inhibitors(p)]
    assert len(plain) == 9 and "alp+inhibitor_x" in plain  # enzyme_inhibition's question
    assert len(structures) == len(set(structures)) == 54 == len(plain) * 6
    assert family.count() == 5 * len(structures) == 270
    assert structures[: len(plain)] == plain
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level is LEVEL[3]
    assert (cls.pair_key, cls.inhibitor_key, cls.absorber_key) == (
        "alp",
        "l_phenylalanine",
        "sunset_yellow",
    )
    assert task_class(INSTANCE) is cls  # built once
    name = InstanceName.parse("inhibition/5/chymotrypsin+indole")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "chymotrypsin+indole")
    for bad in (
        "inhibition/6/alp+levamisole",  # no such level
        "inhibition/1/alp",  # no inhibitor
        "inhibition/1/alp+indole",  # indole inhibits chymotrypsin, not ALP
        "inhibition/1/alp+levamisole+brilliant_blue",  # nothing at 405 nm
        "inhibition/1/alp+levamisole+tartrazine+fmn",
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_part_meets_its_criteria(family) -> None:
    library, engine = SpeciesLibrary.default(), KineticsData.default()
    for key in PAIRS:
        p = pair(key)
        assert inhibitors(key)  # every enzyme has a published inhibitor
        for name in inhibitors(key):
            inh = inhibitor(name)
            prior = engine.inhibitors[name]  # the world's engine knows it, for this enzyme
            assert prior.enzyme == p.enzyme == inh.enzyme
            species = library[name]  # colourless where the product is read
            assert species.kind == "inhibitor"
            assert not species.forms or float(species.absorptivity(p.read_nm)) < 10.0
            assert 0 < inh.ki[0] < inh.ki[1] <= 40.001 * inh.ki[0]
            odds = inh.odds()
            assert set(odds) == set(MECHANISMS) and sum(odds.values()) == pytest.approx(1.0)
            if set(inh.published) == set(MECHANISMS):
                assert all(v == pytest.approx(1 / 3) for v in odds.values())
            else:
                assert sum(odds[m] for m in inh.published) == pytest.approx(PUBLISHED_SHARE)
                assert all(odds[m] > 0 for m in MECHANISMS)
    for structure in family.structures():
        keys = structure.split("+")
        assert keys[1] in inhibitors(keys[0])
        assert all(k in absorbers(keys[0]) for k in keys[2:])


def test_the_levels_weaken_the_enzyme_and_the_inhibitor_stock_and_the_labels_are_published(
    family,
) -> None:
    reach = [LEVEL[n].reach for n in sorted(LEVEL)]
    activity = [LEVEL[n].activity for n in sorted(LEVEL)]
    wells = [LEVEL[n].budget.wells for n in sorted(LEVEL)]
    assert reach == sorted(reach, reverse=True) and reach[-1] >= 2.0
    assert activity == sorted(activity, reverse=True) and wells == sorted(wells, reverse=True)
    for structure in family.structures()[:9]:
        p, inh = pair(structure.split("+")[0]), inhibitor(structure.split("+")[1])
        for level in LEVEL.values():
            top = inhibitor_labels(p, inh, level)["inhibitor"] * INHIBITOR_MAX_UL / WELL_UL
            assert top / inh.ki_centre == pytest.approx(level.reach, rel=0.06)
    labels = []
    for secret in ("one", "two"):
        with Session("inhibition/2/beta_gal+iptg", secret=secret) as session:
            session.reset(3)
            labels.append(json.dumps(session.call_tool("lh_get_deck", {}).unwrap()["labels"]))
    assert labels[0] == labels[1] and "IPTG" in labels[0]


def test_the_out_of_distribution_split_holds_out_species_and_combinations(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert split_instances(family, "validation") == train == split_instances(family, "test-id")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    assert len(ood) == 5 * 23
    for name in train:
        keys = name.structure.split("+")
        assert not {pair(keys[0]).product, *keys[2:]} & HELD_OUT_SPECIES
        assert tuple(keys[1:]) not in HELD_OUT_COMBINATIONS
    assert all(not i.structure.startswith("ache") for i in train)  # TNB is held out
    combos = {tuple(i.structure.split("+")[1:]) for i in train}
    for combination in HELD_OUT_COMBINATIONS:  # each part trains, never the two together
        assert combination not in combos
        assert any(c[0] == combination[0] for c in combos)
        assert any(c[1:] == combination[1:] for c in combos)
        assert any(i.structure.endswith("+".join(combination)) for i in ood)


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise, inhibitor_stock = set(), set(), set(), []
    for level in (1, 5):
        with Session(f"inhibition/{level}/alp+levamisole", secret="wording") as session:
            statements.add(session.reset(0)["task"])
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
            inhibitor_stock.append(
                session.lab.shared["world"].peek(INHIBITOR).concentration("levamisole")
            )
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}
    assert inhibitor_stock[0] > 4 * inhibitor_stock[1]


def test_the_statement_names_the_question_and_tells_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        text = session.reset(9)["task"]
        truth = session.task.truth(session.lab)
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
    for words in (
        "L-Phenylalanine",
        "alkaline phosphatase",
        "p-nitrophenyl phosphate",
        "405 nm",
        "Sunset Yellow",
    ):
        assert words.lower() in text.lower()
    for words in ("competitive", "noncompetitive", "uncompetitive", "submit_inhibition"):
        assert words in text
    for container in (BUFFER, SUBSTRATE, STANDARD, ENZYME, INHIBITOR):
        assert container in text
    assert "published" not in text and "uncompetitive inhibitor" not in text
    for value in (v for v in truth.values() if isinstance(v, float)):
        for shown in (f"{value:.3g}", f"{value * 1e3:.3g}", f"{value * 1e6:.3g}"):
            digits = len(shown.split("e")[0].replace(".", "").lstrip("-0"))
            assert digits < 3 or shown not in text + deck, shown


def test_the_mechanism_is_drawn_as_the_package_says_and_the_wells_run_on_it() -> None:
    task = task_class("inhibition/1/alp+levamisole")()
    rng = np.random.default_rng(0)
    draws = [task._draw_inhibitor(rng) for _ in range(3000)]
    share = sum(d["mechanism"] == "uncompetitive" for d in draws) / len(draws)
    assert share == pytest.approx(PUBLISHED_SHARE, abs=0.03)
    low, high = inhibitor("levamisole").ki
    assert all(low <= d["ki_molar"] <= high for d in draws)
    seen = set()
    with Session("inhibition/1/alp+levamisole", secret="truth") as session:
        for seed in range(12):
            session.reset(seed)
            world = session.lab.shared["world"]
            truth = session.task.truth(session.lab)
            work = world.kinetics.inhibition_at_work("levamisole")
            assert (truth["mechanism"], truth["ki_molar"]) == (
                work["mechanism"],
                work["ki_molar"],
            )
            seen.add(truth["mechanism"])
    assert len(seen) >= 2


def test_the_score_is_enzyme_inhibitions() -> None:
    with Session("inhibition/2/chymotrypsin+indole", secret="score") as session:
        session.reset(1)
        truth = session.task.truth(session.lab)
        exact = {
            "km": {"value": truth["km_molar"] * 1e3, "unit": "millimolar"},
            "kcat": {"value": truth["kcat_per_s"], "unit": "1 / second"},
            "ki": {"value": truth["ki_molar"] * 1e3, "unit": "millimolar"},
            "mechanism": {m: float(m == truth["mechanism"]) for m in MECHANISMS},
        }
        assert session.call_tool("submit_inhibition", exact).ok
        score = session.task.score(session.lab)
        assert score["raw"] == pytest.approx(1.0, abs=1e-6) and score["brier"] == 0.0
        session.reset(1)
        wrong = {**exact, "mechanism": {m: float(m != truth["mechanism"]) / 2 for m in MECHANISMS}}
        assert session.call_tool("submit_inhibition", wrong).ok
        assert session.task.score(session.lab)["mechanism_term"] == pytest.approx(0.25)


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    mm = {"value": 0.5, "unit": "millimolar"}
    per_s = {"value": 200.0, "unit": "1 / second"}
    uniform = {m: 1 / 3 for m in MECHANISMS}
    ok = {"km": mm, "kcat": per_s, "ki": mm, "mechanism": uniform}
    with Session("inhibition/2/alp+inorganic_phosphate", secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(INHIBITOR).volume_ul
        for arguments in (
            {**ok, "ki": {"value": 0.0, "unit": "millimolar"}},
            {**ok, "km": {"value": -1.0, "unit": "millimolar"}},
            {**ok, "kcat": {"value": 5.0, "unit": "millimolar"}},
            {**ok, "mechanism": {"competitive": 0.5, "noncompetitive": 0.2, "uncompetitive": 0.1}},
            {**ok, "mechanism": {"competitive": 1.5, "noncompetitive": -0.5, "uncompetitive": 0}},
            {"km": mm, "kcat": per_s, "ki": mm},
            {**ok, "mechanism": {"competitive": 1.0}},
        ):
            result = session.call_tool("submit_inhibition", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(INHIBITOR).volume_ul == before
        assert session.call_tool("submit_inhibition", ok).ok and session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [7], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    assert first == again == fresh


def test_the_series_and_its_controls_earn_the_outcome(family) -> None:
    """Seeds 0-7 of level 4's training structures: the expert runs every control and the series
    at three inhibitor levels (process 1) and finds the mechanism; the experiment without
    controls (two wells) runs none and earns far less of the outcome."""
    instances = [str(i) for i in split_instances(family, "train") if i.level == 4]
    outcome: dict[str, list[float]] = {"expert": [], "no_controls": []}
    for seed in range(8):
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            for agent in outcome:
                reward = run_episode(session, agent, seed)
                outcome[agent].append(float(reward.components["outcome"]))
                expected = 1.0 if agent == "expert" else 0.0
                assert reward.components["process"] == expected
    assert min(outcome["expert"]) > 0.7
    assert sum(outcome["no_controls"]) < 0.5 * sum(outcome["expert"])


def test_the_stocks_are_where_the_statement_says() -> None:
    assert STOCKS["inhibitor"] == INHIBITOR and STOCKS["enzyme"] == ENZYME
    with Session("inhibition/1/beta_gal+petg", secret="stocks") as session:
        session.reset(0)
        world = session.lab.shared["world"]
        assert world.peek(INHIBITOR).concentration("petg") > 0
        assert math.isclose(world.peek(ENZYME).concentration("petg"), 0.0, abs_tol=0.0)
