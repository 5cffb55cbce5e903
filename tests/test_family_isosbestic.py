"""The ``isosbestic`` family: instances named and built from an indicator and a buffer set;
held-out parts only in ``test-ood``; the truth (the lot's crossing and ε there) in the world,
read the same at every pH, and never in what the agent sees; refusals; determinism; the lot
moving the crossing by about its documented spread, and the expert's scan finding it."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from labtools.session import Session
from labtools.session.evaluate import evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import split_instances
from labtools.simulators.families.equilibrium_parts import (
    HELD_OUT_INDICATORS,
    INDICATOR,
    LEVEL,
    PURE_UNITS,
    indicator,
)
from labtools.simulators.families.isosbestic_parts import (
    LOT_ISO_SD_NM,
    SCALE_LN_EPSILON,
    SCALE_NM,
    SHALLOW,
    crossing,
    library_crossing,
    shallow_slope,
    stock_label_um,
)
from labtools.simulators.families.ph_parts import LOT_EPSILON_SD, LOT_SHIFT_NM_SD, PH_BUFFER_SETS
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.simulators.world import SpeciesLibrary

FAMILY = "isosbestic"
INSTANCE = "isosbestic/3/bromothymol_blue+ph4-10"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 24
    assert family.count() == 5 * len(structures)
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level is LEVEL[3] and cls.budget == LEVEL[3].budget
    assert cls.indicator_key == "bromothymol_blue"
    assert list(cls.buffer_ph.values()) == list(PH_BUFFER_SETS["ph4-10"])
    assert task_class(INSTANCE) is cls  # built once
    name = InstanceName.parse("isosbestic/5/phenol_red+ph5-11")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "phenol_red+ph5-11")
    for bad in (
        "isosbestic/6/phenol_red+ph5-11",  # no such level
        "isosbestic/1/phenol_red+ph2-8",  # the buffers miss the base form
        "isosbestic/1/tartrazine+ph4-10",  # not an indicator
        "isosbestic/1/phenol_red+ph5-11+acid",
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_held_out_structures_go_to_test_ood_only(family) -> None:
    ood = {i.structure for i in split_instances(family, "test-ood")}
    train = {i.structure for i in split_instances(family, "train")}
    assert ood and train and not ood & train
    assert ood | train == set(family.structures())
    for structure in family.structures():
        key, buffers = structure.split("+")
        sparse = "by2" in buffers
        expected = key in HELD_OUT_INDICATORS or (key in SHALLOW and sparse)
        assert (structure in ood) == expected
    # the shallow crossing and the sparse buffers each train, never together
    assert any(s.split("+")[0] in SHALLOW for s in train)
    assert any("by2" in s for s in train)


def test_the_parts_meet_their_criteria(family) -> None:
    for structure in family.structures():
        key, buffers = structure.split("+")
        # every structure's buffers hold both pure forms, whatever the pKa's drawn shift
        phs = PH_BUFFER_SETS[buffers]
        pka = indicator(key).pka
        assert min(phs) <= pka - PURE_UNITS and max(phs) >= pka + PURE_UNITS
        at, epsilon = library_crossing(key)
        peaks = sorted(indicator(key).peak_nm.values())
        assert peaks[0] < at < peaks[1] and epsilon > 1000
        # the shallow crossings are those under 8 % per nm; the rest are steeper
        assert (shallow_slope(key) < 0.08) == (key in SHALLOW)
        for level in range(1, 6):
            assert stock_label_um(key, level) > 0
    # phenol red's library crossing is its published isosbestic point, 477 nm [V]
    assert library_crossing("phenol_red")[0] == pytest.approx(477.0, abs=0.5)


def test_the_lot_moves_the_crossing_by_about_its_documented_spread() -> None:
    library = SpeciesLibrary.default()
    rng = np.random.default_rng(7)
    for key in ("bromophenol_blue", "phenol_red"):
        species = library[key]
        at, _ = library_crossing(key)
        shifts = []
        for _ in range(200):
            forms = {
                f: species.forms[f].varied(
                    math.exp(LOT_EPSILON_SD * rng.standard_normal()),
                    0.0,
                )
                for f in ("acid", "base")
            }
            shift = LOT_SHIFT_NM_SD * rng.standard_normal()
            forms = {f: form.varied(1.0, shift) for f, form in forms.items()}
            lot = dataclasses.replace(species, forms=forms)
            shifts.append(crossing(lot, near=at)[0] - at)
        assert 0.7 * LOT_ISO_SD_NM < float(np.std(shifts)) < 1.4 * LOT_ISO_SD_NM
    assert SCALE_NM < LOT_ISO_SD_NM  # the library's point misses by more than the scale


def test_the_truth_reads_alike_at_every_ph() -> None:
    with Session(INSTANCE, secret="truth") as session:
        session.reset(2)
        truth = session.task.truth(session.lab)
        lot = session.lab.shared["world"].species["bromothymol_blue"]
        at = np.array([truth["isosbestic_nm"]])
        acid = float(lot.forms["acid"].absorptivity(at)[0])
        base = float(lot.forms["base"].absorptivity(at)[0])
        assert acid == pytest.approx(base, rel=1e-6) == pytest.approx(truth["epsilon"])
        assert truth["isosbestic_nm"] != pytest.approx(library_crossing("bromothymol_blue")[0])


def test_the_statement_tells_the_question_and_no_truth() -> None:
    statements = set()
    for level in range(1, 6):
        with Session(f"isosbestic/{level}/bromothymol_blue+ph4-10", secret="words") as s:
            statements.add(s.reset(3)["task"])
    assert len(statements) == 1  # levels change the physics and the budget, not the words
    with Session(INSTANCE, secret="leak") as session:
        observation = session.reset(9)
        statement = observation["task"]
        truth = session.task.truth(session.lab)
        deck = session.call_tool("lh_get_deck", {}).unwrap()
    for said in ("isosbestic point", "Bromothymol blue", "submit_isosbestic", INDICATOR):
        assert said in statement
    assert f"CRPS_nm / {SCALE_NM}" in statement and f"CRPS_ln / {SCALE_LN_EPSILON}" in statement
    assert not re.search(r"level \d|difficulty|\d+(\.\d+)? nm\b", statement.lower())
    label = deck["labels"][INDICATOR]
    assert f"{stock_label_um('bromothymol_blue', 3):g} µM ±1 %" in label
    shown = statement + str(deck)
    for value in truth.values():
        for text in (f"{value:.3g}", f"{value:.4g}"):
            assert text not in shown


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    good = {
        "wavelength_nm": 500.0,
        "wavelength_uncertainty_nm": 1.0,
        "epsilon": 2000.0,
        "epsilon_uncertainty": 100.0,
    }
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        for change in (
            {"epsilon": 0.0},
            {"epsilon": -5.0},
            {"wavelength_nm": 100.0},
            {"wavelength_uncertainty_nm": -1.0},
            {"epsilon_uncertainty": -1.0},
            {"wavelength_nm": "500 nm"},
            {"epsilon": None},
        ):
            result = session.call_tool("submit_isosbestic", {**good, **change})
            assert not result.ok and result.error is not None
        partial = dict(good)
        del partial["epsilon"]
        assert not session.call_tool("submit_isosbestic", partial).ok
        assert session.task.submission is None and not session.done
        assert session.score().raw == 0.0


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [4], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [4], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [4], k=1, session=session)
    assert first == again == fresh


def test_the_score_is_the_product_of_both_crps_terms() -> None:
    with Session(INSTANCE, secret="score") as session:
        session.reset(2)
        truth = session.task.truth(session.lab)
        at, eps = truth["isosbestic_nm"] + 0.3, truth["epsilon"] * 1.02
        session.call_tool(
            "submit_isosbestic",
            {
                "wavelength_nm": at,
                "wavelength_uncertainty_nm": 0.2,
                "epsilon": eps,
                "epsilon_uncertainty": 0.01 * eps,
            },
        ).unwrap()
        score = session.task.score(session.lab)
    expected = math.exp(-crps_normal(at, 0.2, truth["isosbestic_nm"]) / SCALE_NM) * math.exp(
        -crps_normal(math.log(eps), 0.01, math.log(truth["epsilon"])) / SCALE_LN_EPSILON
    )
    assert score["raw"] == pytest.approx(expected)


def test_the_expert_finds_the_lots_crossing_and_the_library_misses_it() -> None:
    errors, library = [], []
    with Session(INSTANCE, secret="scan") as session:
        for seed in range(4):
            run_episode(session, "expert", seed)
            score = session.task.score(session.lab)
            errors.append(abs(score["error_nm"]))
            truth = session.task.truth(session.lab)
            library.append(abs(library_crossing("bromothymol_blue")[0] - truth["isosbestic_nm"]))
            assert abs(score["error_ln_epsilon"]) < 0.05
    assert max(errors) < 0.25 and np.mean(errors) < np.mean(library)
