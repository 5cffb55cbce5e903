"""The ``arrhenius`` family: instances named and built from an enzyme-substrate pair and a
temperature window; held-out parts only in ``test-ood``; the enzyme's temperature laws drawn
from ``kinetics.toml`` into the world and never in what the agent sees; refusals; the truth the
wells run on; the plate's temperature lag and the enzyme's slow loss as what the expert's
controls correct."""

from __future__ import annotations

import json
import math

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import played, split_instances
from labtools.simulators.families.arrhenius import TAU
from labtools.simulators.families.arrhenius_parts import (
    HELD_OUT_COMBINATIONS,
    LEVEL,
    REFERENCE_C,
    SATURATION,
    WINDOWS,
    held_out,
    labels,
    setpoints,
)
from labtools.simulators.families.kinetics import SUBSTRATE
from labtools.simulators.families.kinetics_parts import (
    PAIRS,
    SUBSTRATE_MAX_UL,
    WELL_UL,
    pair,
    temperature_prior,
)
from labtools.simulators.families.parts import HELD_OUT_SPECIES
from labtools.simulators.plate_reading.params import reader_data
from labtools.simulators.world.kinetics import KineticsData
from labtools.simulators.world.kinetics_temperature import GAS_CONSTANT, kelvin

FAMILY = "arrhenius"
INSTANCE = "arrhenius/3/chymotrypsin+29to41"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == len(PAIRS) * len(WINDOWS) == 12
    assert family.count() == 60
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level is LEVEL[3]
    assert (cls.pair_key, cls.window) == ("chymotrypsin", "29to41")
    assert task_class(INSTANCE) is cls  # built once
    name = InstanceName.parse("arrhenius/5/alp+33to45")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "alp+33to45")
    for bad in (
        "arrhenius/6/alp+29to37",  # no such level
        "arrhenius/1/trypsin+29to37",  # no such pair
        "arrhenius/1/alp+20to30",  # no such window
        "arrhenius/1/alp",  # no window
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_part_meets_its_criteria(family) -> None:
    """Every pair's enzyme has temperature laws; every window lies in the reader's range and
    holds the reference temperature; its setpoints span it."""
    heat = reader_data()["incubation"]
    low_c, high_c = 25.0 + float(heat["above_room_c"]), float(heat["max_c"])
    for key in PAIRS:
        laws = temperature_prior(pair(key))
        assert 0 < laws.kcat_ea_kj[0] < laws.kcat_ea_kj[1] <= 100
        assert laws.residual_56[0] >= 0.10  # unfolding under a third of the room's loss
        assert KineticsData.default().enzymes[pair(key).enzyme].temperature is laws
    for window, (low, high) in WINDOWS.items():
        assert low_c <= low < REFERENCE_C <= high <= high_c
        points = setpoints(window)
        assert points[0] == low and points[-1] == high and points == sorted(set(points))
    for structure in family.structures():
        key, window = structure.split("+")
        assert key in PAIRS and window in WINDOWS


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
        "ache+29to37",
        "ache+29to41",
        "ache+33to45",
        "beta_gal+33to45",
    }
    for name in train:
        key, _ = name.structure.split("+")
        assert pair(key).product not in HELD_OUT_SPECIES and not held_out(name.structure)
    combos = {tuple(i.structure.split("+")) for i in train}
    for combination in HELD_OUT_COMBINATIONS:  # each part trains, never the two together
        assert combination not in combos
        assert any(c[0] == combination[0] for c in combos)
        assert any(c[1] == combination[1] for c in combos)


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise, enzymes = set(), set(), set(), []
    for level in (1, 5):
        with Session(f"arrhenius/{level}/alp+29to41", secret="wording") as session:
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


def test_the_statement_names_the_question_and_tells_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        observation = session.reset(9)
        text = observation["task"]
        truth = session.task.truth(session.lab)
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
    for words in ("Chymotrypsin", "between 29 and 41 °C", "37 °C", "submit_arrhenius"):
        assert words in text
    assert "activation energy" in text and "per labelled active site" in text
    assert f"τ = {TAU}" in text and "reader_set_temperature" in text
    for value in truth.values():
        for shown in (f"{value:.3g}", f"{value * 1e-3:.3g}", f"{value * 1e3:.3g}"):
            digits = len(shown.split("e")[0].replace(".", "").lstrip("-0"))
            assert digits < 3 or shown not in text + deck, shown


def test_the_truth_is_what_the_wells_run_on() -> None:
    """Ea is the secant of the initial rate over the window at the stated substrate, from the
    drawn temperature laws installed in the engine; k37 that rate at 37 °C."""
    with Session(INSTANCE, secret="truth") as session:
        session.reset(4)
        world = session.lab.shared["world"]
        task = session.task
        truth = task.truth(session.lab)
        p = task.pair
        thermal = world.kinetics.thermal(p.enzyme)
        assert thermal["kcat_ea"] == truth["kcat_ea"]
        low, high = temperature_prior(p).kcat_ea_kj
        assert 1e3 * low <= truth["kcat_ea"] <= 1e3 * high
        s = task.substrate_molar()

        def rate(celsius: float) -> float:
            work = world.kinetics.at_work(p.enzyme, celsius)
            return work["kcat_per_s"] * s / (work["km_molar"] + s)

        assert truth["k37_per_s"] == pytest.approx(rate(37.0))
        ea = GAS_CONSTANT * math.log(rate(41.0) / rate(29.0)) / (1 / kelvin(29) - 1 / kelvin(41))
        assert truth["ea_j_per_mol"] == pytest.approx(ea)
        first = dict(truth)
        session.reset(4)
        assert session.task.truth(session.lab) == first  # same seed, same truth
        session.reset(5)
        assert session.task.truth(session.lab)["kcat_ea"] != first["kcat_ea"]


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    per_s = {"value": 200.0, "unit": "1 / second"}
    with Session("arrhenius/2/alp+29to37", secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(SUBSTRATE).volume_ul
        for arguments in (
            {"activation_energy": 0.0, "k37": per_s},
            {"activation_energy": -30.0, "k37": per_s},
            {"activation_energy": 5000.0, "k37": per_s},
            {"activation_energy": 40.0, "k37": {"value": 0.0, "unit": "1 / second"}},
            {"activation_energy": 40.0, "k37": {"value": 5.0, "unit": "millimolar"}},
            {"activation_energy": 40.0},
        ):
            result = session.call_tool("submit_arrhenius", arguments)
            assert not result.ok and result.error is not None, arguments
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(SUBSTRATE).volume_ul == before
        ok = {"activation_energy": 40.0, "k37": per_s}
        assert session.call_tool("submit_arrhenius", ok).ok and session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [7], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    assert first == again == fresh


def test_a_plate_lags_its_chamber_and_a_warm_enzyme_unfolds() -> None:
    """What the controls are for: right after the chamber holds its setpoint a plate from the
    deck is still degrees short of it, and at a window's top the enzyme loses activity faster
    than at 25 °C."""
    with Session("arrhenius/1/alp+33to45", secret="physics") as session:
        session.reset(2)
        world = session.lab.shared["world"]
        session.call_tool(
            "reader_set_temperature",
            {"temperature": {"value": 45.0, "unit": "degree_Celsius"}, "wait": True},
        )
        assert world.thermal.temperature("plate_1") == 25.0  # on the deck
        session.call_tool("lh_move_plate", {"plate": "plate_1", "destination": "reader"})
        session.call_tool(
            "reader_read_absorbance_kinetic",
            {
                "plate": "plate_1",
                "wells": ["A1"],
                "wavelength": {"value": 405, "unit": "nanometer"},
                "interval": {"value": 300, "unit": "second"},
                "reads": 2,
            },
        )
        assert world.thermal.temperature("plate_1") < 45.0 - 4.0
        enzyme = session.task.pair.enzyme
        warm = world.kinetics.at_work(enzyme, 45.0)["kd_per_s"]
        assert warm > 2 * world.kinetics.at_work(enzyme)["kd_per_s"]


def test_the_expert_runs_every_control_and_the_uncontrolled_experiment_misses(family) -> None:
    """Seeds 0-5 of level 3's training structures: the expert runs every control (process 1)
    and its Ea is within 10 %; the experiment without controls runs none, and its Ea, from
    plates read before they reached their setpoints, falls short by more than 15 %."""
    instances = [str(i) for i in split_instances(family, "train") if i.level == 3]
    for seed in range(6):
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            expert = run_episode(session, "expert", seed)
            uncontrolled = run_episode(session, "no_controls", seed)
        assert expert.components["process"] == 1.0
        assert abs(math.log(expert.components["ea_ratio"])) < 0.1
        assert uncontrolled.components["process"] == 0.0
        assert uncontrolled.components["ea_ratio"] < 0.85
