"""The ``fluorimetry`` family: fluorophores in coloured matrices, named and built from the
library's emitters and the analytes that absorb their light, held-out species only in
``test-ood``; the truth (the sample, its matrix, the lot) in the world and never in the statement
or on the deck; refusals, determinism, and the matrix's inner filter, which a standard curve in
water does not see and standard additions do."""

from __future__ import annotations

import json
import statistics

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import played, split_instances
from labtools.simulators.families.fluorimetry import standard_label_um
from labtools.simulators.families.fluorimetry_expert import DELIVERY_UL, STEP, _chain
from labtools.simulators.families.fluorimetry_parts import (
    CLASSES,
    FLUOROPHORES,
    LEVEL,
    MATRICES,
    MATRIX_MIN,
    filters,
    nominal_rfu_per_um,
    optics,
)
from labtools.simulators.families.parts import HELD_OUT_SPECIES, analyte
from labtools.simulators.families.task import SAMPLE, STANDARDS
from labtools.simulators.world import SpeciesLibrary

FAMILY = "fluorimetry"
STRUCTURE = "fluorescein+sunset_yellow"
INSTANCE = f"{FAMILY}/3/{STRUCTURE}"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_fluorophores_and_matrices(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 59 and family.count() == 295
    assert {s.split("+")[0] for s in structures} == set(FLUOROPHORES)
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level.number == 3 and task_class(INSTANCE) is cls
    assert (cls.analyte_key, cls.matrix_key, cls.interferent_key) == (
        "fluorescein",
        "sunset_yellow",
        None,
    )
    name = InstanceName.parse(INSTANCE)
    assert (name.family, name.level, name.structure) == (FAMILY, 3, STRUCTURE)
    for bad in (
        f"{FAMILY}/6/{STRUCTURE}",
        f"{FAMILY}/3/fluorescein+brilliant_blue",  # blue does not absorb fluorescein's light
        f"{FAMILY}/3/tartrazine+sunset_yellow",  # no emitter
        f"{FAMILY}/3/fluorescein",
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_held_out_species_are_only_in_the_out_of_distribution_split(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    assert all(HELD_OUT_SPECIES & set(i.structure.split("+")) for i in ood)
    assert not {k for i in train for k in i.structure.split("+")} & HELD_OUT_SPECIES
    assert len({i.structure for i in ood}) == 23  # eosin Y, FMN, and the allura red, TNB matrices
    # every class of fluorophore trains: a held-out emitter's class is seen without it
    assert {analyte(i.structure.split("+")[0]).kind for i in train} == set(CLASSES)


def test_the_parts_meet_their_criteria() -> None:
    library = SpeciesLibrary.default()
    for key in FLUOROPHORES:
        fluorescence = library[key].fluorescence
        assert fluorescence is not None and analyte(key).kind in CLASSES
        ex, em = optics(key)
        assert em > ex and 0.0 < fluorescence.quantum_yield <= 1.0
    assert "erythrosine" not in FLUOROPHORES and "methylene_blue" not in FLUOROPHORES
    assert all(library[m].fluorescence is None for m in MATRICES)
    for structure in load_family(FAMILY).structures():
        key, matrix = structure.split("+")
        assert filters(key, matrix)
        ex, em = optics(key)
        share = max(float(library[matrix].absorptivity(float(w))) for w in (ex, em))
        assert share >= MATRIX_MIN * analyte(matrix).epsilon
    # the published reader's calibration: 200 RFU per nM of fluorescein in its reference
    # geometry; a 200 µL well at the reader's own height collects within a factor of two of it
    assert 1e5 < nominal_rfu_per_um("fluorescein") < 4e5
    assert nominal_rfu_per_um("nadh") < nominal_rfu_per_um("quinine_sulfate")
    # the levels: brighter and less filtered at 1, near the floor and filtered at 5
    for low, high in zip((1, 2, 3, 4), (2, 3, 4, 5), strict=True):
        assert LEVEL[low].signal[0] > LEVEL[high].signal[0]
        assert LEVEL[low].signal[1] > LEVEL[high].signal[1]
        assert LEVEL[low].filter_od[0] < LEVEL[high].filter_od[0]


def test_the_statement_names_the_parts_and_no_truth() -> None:
    statements = set()
    for level in (1, 5):
        with Session(f"{FAMILY}/{level}/{STRUCTURE}", secret="wording") as session:
            observation = session.reset(4)
            statements.add(observation["task"])
            truth = session.task.truth(session.lab)
            deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
            shown = observation["task"] + deck
            for value in (truth["analyte_um"], truth["matrix_um"]):
                for text in (f"{value:.3g}", f"{value:.4g}", f"{value * 1e-6:.3e}"):
                    assert text not in shown
            for factor in (truth["epsilon_factor"], truth["yield_factor"]):
                assert f"{factor:.4f}" not in shown
    assert len(statements) == 1  # a level changes the physics, never the wording
    (text,) = statements
    label = f"{standard_label_um('fluorescein'):g} µM"
    for said in ("Fluorescein", "Sunset Yellow", "490 nm", "515 nm", "submit_quantify", label):
        assert said in text
    assert "does not fluoresce" in text and "standard added to the sample" in text


def test_the_lot_is_in_the_worlds_library_and_the_standard_shares_it() -> None:
    with Session(INSTANCE, secret="lot") as session:
        session.reset(2)
        truth = session.task.truth(session.lab)
        world = session.lab.shared["world"]
        drawn = world.species["fluorescein"]
        listed = SpeciesLibrary.default()["fluorescein"]
        assert drawn.fluorescence.quantum_yield == pytest.approx(
            min(1.0, listed.fluorescence.quantum_yield * truth["yield_factor"])
        )
        assert drawn.epsilon_max == pytest.approx(listed.epsilon_max * truth["epsilon_factor"])
        sample = world.peek(SAMPLE)
        assert set(sample.amounts) == {"fluorescein", "sunset_yellow"}
        assert set(world.peek(STANDARDS[0]).amounts) == {"fluorescein"}


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(SAMPLE).volume_ul
        micromolar = {"value": 1.0, "unit": "micromolar"}
        for arguments in (
            {"concentration": {"value": -1.0, "unit": "micromolar"}, "uncertainty": micromolar},
            {"concentration": micromolar, "uncertainty": {"value": 1.0, "unit": "metre"}},
            {"concentration": "1 µM", "uncertainty": micromolar},
            {"concentration": micromolar},
        ):
            result = session.call_tool("submit_quantify", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(SAMPLE).volume_ul == before


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [5], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [5], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [5], k=1, session=session)
    assert first == again == fresh


def test_the_sample_dilutions_take_whole_deliveries() -> None:
    for dilution in (1.5, 7.0, 30.0, 500.0, 9000.0):
        moves, per_well = _chain(dilution, 7, SAMPLE, "F", "reservoir:A1")
        depth = len(moves) // 2
        made = STEP**depth * 200.0 / (DELIVERY_UL * per_well)
        assert made >= dilution * 0.999 and per_well >= 1
        assert all(v == DELIVERY_UL for s, _, v in moves if s != "reservoir:A1")
        if depth:  # a dilution well gives the next step and every well without running dry
            assert per_well * DELIVERY_UL * 7 + DELIVERY_UL + 12.0 <= 200.0


def _outcomes(level: int, agent: str, seeds: range) -> list[float]:
    family = load_family(FAMILY)
    instances = [str(i) for i in split_instances(family, "train") if i.level == level]
    out = []
    for seed in seeds:
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            if agent == "water_curve":
                session.reset(seed)
                session.task.water_curve(session)
                reward = session.score()
            else:
                reward = run_episode(session, agent, seed)
            out.append(float(reward.components["outcome"]))
    return out


def test_a_standard_curve_in_water_misses_the_matrixs_inner_filter() -> None:
    """At level 1 the sample is diluted until its matrix hardly filters, and standards in
    water serve; at level 5 it is read nearly neat through its matrix, and only standards added
    to the sample itself (the expert's) earn the outcome."""
    seeds = range(6)
    water_1 = statistics.fmean(_outcomes(1, "water_curve", seeds))
    water_5 = statistics.fmean(_outcomes(5, "water_curve", seeds))
    expert_5 = statistics.fmean(_outcomes(5, "expert", seeds))
    assert water_1 > 0.5 and water_5 < 0.1 and expert_5 > 0.6


def test_the_experiment_without_controls_misses_on_its_own() -> None:
    """The library's ε and yield and the nominal reader miss the lot and the reader's scale:
    the outcome itself, not only the rubric, holds the experiment without controls down."""
    assert statistics.fmean(_outcomes(2, "no_controls", range(8))) < 0.35
