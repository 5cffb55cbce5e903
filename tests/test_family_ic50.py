"""The ``ic50`` family: instances named and built from the ``inhibition`` family's structures
with a stated substrate level; held-out parts only in ``test-ood``; the IC50's truth from
Cheng–Prusoff on the world's hidden mechanism, Ki and Km; the statement and the deck telling no
truth; refusals; determinism; the dose-response series and its controls earning the outcome."""

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
from labtools.simulators.families.ic50 import IC50Task
from labtools.simulators.families.ic50_expert import doses, fit_logistic, logistic
from labtools.simulators.families.ic50_parts import (
    LEVEL,
    RATIOS,
    cheng_prusoff,
    expected_ic50,
    ic50_labels,
    ic50_span,
    stated_substrate,
    substrate_ratio,
)
from labtools.simulators.families.inhibition import INHIBITOR
from labtools.simulators.families.inhibition_parts import INHIBITOR_MAX_UL, inhibitor
from labtools.simulators.families.inhibition_parts import held_out as inhibition_held_out
from labtools.simulators.families.kinetics import BUFFER, ENZYME, STANDARD, SUBSTRATE
from labtools.simulators.families.kinetics_parts import WELL_UL, pair
from labtools.simulators.world.kinetics import MECHANISMS

FAMILY = "ic50"
INSTANCE = "ic50/3/alp+levamisole+tartrazine"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert structures == load_family("inhibition").structures()
    assert len(structures) == len(set(structures)) == 54 and family.count() == 270
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and issubclass(cls, IC50Task)
    assert (cls.pair_key, cls.inhibitor_key, cls.absorber_key) == (
        "alp",
        "levamisole",
        "tartrazine",
    )
    assert cls.level.number == 3 and cls.budget == LEVEL[3].budget
    assert cls.substrate_molar == stated_substrate("alp+levamisole+tartrazine")
    assert task_class(INSTANCE) is cls  # built once
    name = InstanceName.parse("ic50/5/chymotrypsin+indole")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "chymotrypsin+indole")
    for bad in (
        "ic50/6/alp+levamisole",  # no such level
        "ic50/1/alp",  # no inhibitor
        "ic50/1/alp+indole",  # indole inhibits chymotrypsin
        "ic50/1/alp+levamisole+brilliant_blue",  # nothing at 405 nm
        "ic50/1/alp+levamisole+tartrazine+fmn",
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_the_substrate_levels_span_the_ratios_and_the_labels_reach_them(family) -> None:
    ratios = {substrate_ratio(s) for s in family.structures()}
    assert ratios == set(RATIOS) and min(RATIOS) == 0.3 and max(RATIOS) == 5.0
    for structure in family.structures():
        p, inh = pair(structure.split("+")[0]), inhibitor(structure.split("+")[1])
        s = stated_substrate(structure)
        assert s / p.km_centre == pytest.approx(substrate_ratio(structure), rel=0.06)
        for level in LEVEL.values():
            molar = ic50_labels(p, inh, level, s)
            assert molar["substrate"] * 100.0 / WELL_UL > s  # half the well of it reaches S
            top = molar["inhibitor"] * INHIBITOR_MAX_UL / WELL_UL
            assert top / expected_ic50(p, inh, s) == pytest.approx(level.reach, rel=0.06)
        low, high = ic50_span(p, inh, s)
        assert low <= expected_ic50(p, inh, s) <= high
    reach = [LEVEL[n].reach for n in sorted(LEVEL)]
    wells = [LEVEL[n].budget.wells for n in sorted(LEVEL)]
    assert reach == sorted(reach, reverse=True) and wells == sorted(wells, reverse=True)


def test_cheng_prusoff_and_the_logistic() -> None:
    assert cheng_prusoff("competitive", 1.0, 2.0, 2.0) == 2.0
    assert cheng_prusoff("uncompetitive", 1.0, 2.0, 1.0) == 3.0
    assert cheng_prusoff("noncompetitive", 1.0, 2.0, 7.0) == 1.0
    with pytest.raises(ValueError):
        cheng_prusoff("mixed", 1.0, 1.0, 1.0)
    # each mechanism's initial rate is halved at its IC50, and follows a Hill slope of 1
    km, ki, s = 0.5, 0.2, 1.5
    for mechanism in MECHANISMS:
        ic50 = cheng_prusoff(mechanism, ki, km, s)
        a, b = (1 + ic50 / ki, 1.0)
        if mechanism == "competitive":
            v = s / (km * (1 + ic50 / ki) + s) / (s / (km + s))
        elif mechanism == "uncompetitive":
            v = s / (km + s * a) / (s / (km + s))
        else:
            v = b / a
        assert v == pytest.approx(0.5)
    x = np.geomspace(1e-6, 1e-2, 12)
    y = logistic(x, 1.0, 0.0, math.log(1e-4), 1.0)
    ic50, sd, hill = fit_logistic(x, y, 3e-5)
    assert ic50 == pytest.approx(1e-4, rel=1e-4) and hill == pytest.approx(1.0, rel=1e-3)
    assert sd < 0.01


def test_the_expert_series_brackets_what_the_package_allows() -> None:
    p, inh = pair("alp"), inhibitor("levamisole")
    s = stated_substrate("alp+levamisole")
    low, high = ic50_span(p, inh, s)
    ample = doses(p, inh, s, 1.0, 12)
    assert len(ample) == 12 and ample[0] < low and ample[-1] > high
    short = doses(p, inh, s, high * WELL_UL / INHIBITOR_MAX_UL, 8)
    assert short[-1] == pytest.approx(high) and len(short) == 8


def test_the_out_of_distribution_split_is_the_inhibition_familys(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    assert ood and all(inhibition_held_out(i.structure) for i in ood)
    assert all(not inhibition_held_out(i.structure) for i in train)


def test_the_truth_is_cheng_prusoff_on_what_the_wells_run_on() -> None:
    seen = set()
    with Session("ic50/2/alp+inhibitor_x", secret="truth") as session:
        for seed in range(10):
            session.reset(seed)
            truth = session.task.truth(session.lab)
            work = session.lab.shared["world"].kinetics.inhibition_at_work("inhibitor_x")
            assert truth["mechanism"] == work["mechanism"]
            expected = cheng_prusoff(
                truth["mechanism"],
                truth["ki_molar"],
                truth["km_molar"],
                session.task.substrate_molar,
            )
            assert truth["ic50_molar"] == expected and truth["hill"] == 1.0
            seen.add(truth["mechanism"])
    assert len(seen) >= 2


def test_the_statement_names_the_question_and_tells_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        text = session.reset(9)["task"]
        truth = session.task.truth(session.lab)
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
    for words in ("Levamisole", "alkaline phosphatase", "405 nm", "Tartrazine", "IC50", "Hill"):
        assert words.lower() in text.lower()
    assert "submit_ic50" in text
    for container in (BUFFER, SUBSTRATE, STANDARD, ENZYME, INHIBITOR):
        assert container in text
    for words in ("competitive", "Ki", "published"):
        assert words not in text
    for value in (v for v in truth.values() if isinstance(v, float)):
        for shown in (f"{value:.3g}", f"{value * 1e3:.3g}", f"{value * 1e6:.3g}"):
            digits = len(shown.split("e")[0].replace(".", "").lstrip("-0"))
            assert digits < 3 or shown not in text + deck, shown


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise = set(), set(), set()
    for level in (1, 5):
        with Session(f"ic50/{level}/beta_gal+petg", secret="wording") as session:
            statements.add(session.reset(0)["task"])
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}


def test_the_score_and_its_hill_term() -> None:
    with Session("ic50/2/chymotrypsin+indole", secret="score") as session:
        session.reset(1)
        truth = session.task.truth(session.lab)
        exact = {
            "ic50": {"value": truth["ic50_molar"] * 1e6, "unit": "micromolar"},
            "ic50_uncertainty": {"value": 0.0, "unit": "micromolar"},
            "hill": 1.0,
        }
        assert session.call_tool("submit_ic50", exact).ok
        assert session.task.score(session.lab)["raw"] == pytest.approx(1.0, abs=1e-9)
        session.reset(1)
        assert session.call_tool("submit_ic50", {**exact, "hill": 3.0}).ok
        score = session.task.score(session.lab)["raw"]
        assert 0.8 <= score < 0.81  # the Hill slope weighs lightly


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    um = {"value": 50.0, "unit": "micromolar"}
    ok = {"ic50": um, "ic50_uncertainty": {"value": 5.0, "unit": "micromolar"}, "hill": 1.0}
    with Session("ic50/2/alp+inorganic_phosphate", secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(INHIBITOR).volume_ul
        for arguments in (
            {**ok, "ic50": {"value": 0.0, "unit": "micromolar"}},
            {**ok, "ic50": {"value": -1.0, "unit": "micromolar"}},
            {**ok, "ic50": {"value": 5.0, "unit": "second"}},
            {**ok, "ic50_uncertainty": {"value": -1.0, "unit": "micromolar"}},
            {**ok, "hill": 0.0},
            {**ok, "hill": -1.0},
            {"ic50": um, "hill": 1.0},
        ):
            result = session.call_tool("submit_ic50", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(INHIBITOR).volume_ul == before
        assert session.call_tool("submit_ic50", ok).ok and session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [7], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    assert first == again == fresh


def test_the_series_and_its_controls_earn_the_outcome(family) -> None:
    """Seeds 0-7 of level 3's training structures: the expert runs every control and the series
    (process 1); the one-point experiment without controls runs almost none and earns less of
    the outcome itself."""
    instances = [str(i) for i in split_instances(family, "train") if i.level == 3]
    outcome: dict[str, list[float]] = {"expert": [], "no_controls": []}
    for seed in range(8):
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            for agent in outcome:
                reward = run_episode(session, agent, seed)
                outcome[agent].append(float(reward.components["outcome"]))
                if agent == "expert":
                    assert reward.components["process"] == 1.0
                else:
                    assert reward.components["process"] < 0.2
    assert sum(outcome["no_controls"]) < 0.9 * sum(outcome["expert"])
