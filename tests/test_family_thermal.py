"""The ``thermal`` family: instances named and built from an enzyme-substrate pair and a test
temperature; held-out parts only in ``test-ood``; the enzyme's temperature laws drawn from
``kinetics.toml`` into the world and never in what the agent sees; refusals; the truth the wells
run on; the plate's warming as what the expert's settled fit corrects."""

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
from labtools.simulators.families.kinetics import SUBSTRATE
from labtools.simulators.families.kinetics_parts import (
    PAIRS,
    SUBSTRATE_MAX_UL,
    WELL_UL,
    pair,
    temperature_prior,
)
from labtools.simulators.families.parts import HELD_OUT_SPECIES
from labtools.simulators.families.thermal import TAU
from labtools.simulators.families.thermal_expert import fit_decay
from labtools.simulators.families.thermal_parts import (
    HALF_LIFE_MIN,
    HELD_OUT_COMBINATIONS,
    LEVEL,
    SATURATION,
    TEMPERATURES,
    celsius_of,
    centre_half_life_min,
    held_out,
    labels,
)
from labtools.simulators.plate_reading.params import reader_data

FAMILY = "thermal"
INSTANCE = "thermal/3/chymotrypsin+49C"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 18
    assert family.count() == 90
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level is LEVEL[3]
    assert (cls.pair_key, cls.celsius) == ("chymotrypsin", 49.0)
    assert task_class(INSTANCE) is cls  # built once
    name = InstanceName.parse("thermal/5/alp+49.5C")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "alp+49.5C")
    assert task_class("thermal/5/alp+49.5C").celsius == 49.5
    for bad in (
        "thermal/6/alp+50C",  # no such level
        "thermal/1/trypsin+50C",  # no such pair
        "thermal/1/alp+45C",  # no such temperature
        "thermal/1/alp+48C",  # its centre half-life is past two hours
        "thermal/1/alp",  # no temperature
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_part_meets_its_criteria(family) -> None:
    """Every temperature lies in the reader's range; every structure's centre half-life lies in
    the asked range; every pair's enzyme has temperature laws whose spans leave the half-life
    uncertain over a wide span (the truth must be measured)."""
    heat = reader_data()["incubation"]
    low_c, high_c = 25.0 + float(heat["above_room_c"]), float(heat["max_c"])
    assert all(low_c <= t <= high_c for t in TEMPERATURES)
    for structure in family.structures():
        key = structure.split("+")[0]
        assert key in PAIRS and celsius_of(structure) in TEMPERATURES
        minutes = centre_half_life_min(pair(key), celsius_of(structure))
        assert HALF_LIFE_MIN[0] <= minutes <= HALF_LIFE_MIN[1]
    for key in PAIRS:
        laws = temperature_prior(pair(key))
        assert laws.residual_56[1] / laws.residual_56[0] >= 3.0
        assert laws.unfolding_ea_kj[1] - laws.unfolding_ea_kj[0] >= 100.0


def test_the_labels_follow_the_level_and_the_literature_only() -> None:
    for key in PAIRS:
        p = pair(key)
        strengths = []
        for level in LEVEL.values():
            molar = labels(p, level)
            top = molar["substrate"] * SUBSTRATE_MAX_UL / WELL_UL
            assert top / p.km_centre == pytest.approx(SATURATION, rel=0.06)
            strengths.append(molar["enzyme"])
        assert strengths == sorted(strengths, reverse=True) and strengths[0] > 20 * strengths[-1]
    stocks = []
    for secret in ("one", "two"):
        with Session(INSTANCE, secret=secret) as session:
            session.reset(3)
            stocks.append(json.dumps(session.call_tool("lh_get_deck", {}).unwrap()["labels"]))
    assert stocks[0] == stocks[1]


def test_the_out_of_distribution_split_holds_out_a_species_and_a_combination(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    assert {i.structure for i in ood} == {
        "ache+48C",
        "ache+48.5C",
        "ache+49C",
        "ache+49.5C",
        "ache+50C",
        "beta_gal+49C",
    }
    for name in train:
        key = name.structure.split("+")[0]
        assert pair(key).product not in HELD_OUT_SPECIES and not held_out(name.structure)
    combos = {(i.structure.split("+")[0], celsius_of(i.structure)) for i in train}
    for combination in HELD_OUT_COMBINATIONS:  # each part trains, never the two together
        assert combination not in combos
        assert any(c[0] == combination[0] for c in combos)
        assert any(c[1] == combination[1] for c in combos)


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise, enzymes = set(), set(), set(), []
    for level in (1, 5):
        with Session(f"thermal/{level}/alp+50C", secret="wording") as session:
            statements.add(session.reset(0)["task"])
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
            enzymes.append(
                session.lab.shared["world"]
                .peek("reservoir:A5")
                .concentration("alkaline_phosphatase")
            )
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}
    assert enzymes[0] > 20 * enzymes[1]
    assert LEVEL[1].budget.hours > LEVEL[5].budget.hours


def test_the_statement_names_the_question_and_tells_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        observation = session.reset(9)
        text = observation["task"]
        truth = session.task.truth(session.lab)
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
    for words in ("Chymotrypsin", "49 °C", "half-life", "minutes", "submit_thermal"):
        assert words in text
    assert f"τ = {TAU}" in text and "reader_set_temperature" in text
    for value in truth.values():
        for shown in (f"{value:.3g}", f"{value * 1e-3:.3g}", f"{value * 60:.3g}"):
            digits = len(shown.split("e")[0].replace(".", "").lstrip("-0"))
            assert digits < 3 or shown not in text + deck, shown


def test_the_truth_is_what_the_wells_run_on() -> None:
    """The half-life is ln 2 over the engine's k_d at the stated temperature, from the drawn
    temperature laws; the same seed draws the same, another seed another."""
    with Session(INSTANCE, secret="truth") as session:
        session.reset(4)
        world = session.lab.shared["world"]
        task = session.task
        truth = task.truth(session.lab)
        thermal = world.kinetics.thermal(task.pair.enzyme)
        assert thermal["residual_56"] == truth["residual_56"]
        kd = world.kinetics.at_work(task.pair.enzyme, 49.0)["kd_per_s"]
        assert truth["half_life_min"] == pytest.approx(math.log(2.0) / kd / 60.0)
        first = dict(truth)
        session.reset(4)
        assert session.task.truth(session.lab) == first
        session.reset(5)
        assert session.task.truth(session.lab)["half_life_min"] != first["half_life_min"]


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session("thermal/2/alp+50C", secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(SUBSTRATE).volume_ul
        for arguments in (
            {"half_life": 0.0},
            {"half_life": -30.0},
            {"half_life": 1e9},
            {"half_life": "long"},
            {},
        ):
            result = session.call_tool("submit_thermal", arguments)
            assert not result.ok and result.error is not None, arguments
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(SUBSTRATE).volume_ul == before
        assert session.call_tool("submit_thermal", {"half_life": 40.0}).ok and session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [7], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    assert first == again == fresh


def test_the_decay_fit_recovers_a_first_order_loss() -> None:
    t = np.arange(0.0, 7200.0, 60.0)
    kd = math.log(2.0) / 2400.0
    rng = np.random.default_rng(0)
    curves = [0.05 + a * -np.expm1(-kd * t) + rng.normal(0, 0.002, t.size) for a in (0.8, 1.0)]
    assert fit_decay(t, curves) == pytest.approx(kd, rel=0.03)


def test_the_expert_runs_every_control_and_the_uncontrolled_experiment_misses(family) -> None:
    """Seeds 0-5 of level 3's training structures: the expert runs every control (process 1)
    and its half-life is within 15 %; the experiment without controls (time zero read while the
    plate warms, in a read of its own) is off by more than 25 % or gives no positive loss."""
    instances = [str(i) for i in split_instances(family, "train") if i.level == 3]
    for seed in range(6):
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            expert = run_episode(session, "expert", seed)
            uncontrolled = run_episode(session, "no_controls", seed)
        assert expert.components["process"] == 1.0
        assert abs(math.log(expert.components["half_life_ratio"])) < 0.15
        assert uncontrolled.components["process"] < 0.5
        assert abs(math.log(uncontrolled.components["half_life_ratio"])) > 0.25
