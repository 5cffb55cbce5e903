"""The ``detection_limit`` family: instances named and built from a method's analyte,
wavelength and volume; held-out parts only in ``test-ood``; the truth (the reader unit's noise,
the lot's ε, the path) in the world and never in what the agent sees; the ICH limits from it;
refusals; determinism; more blanks earning a better estimate."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from labtools.session import Session
from labtools.session.agents import AGENTS
from labtools.session.evaluate import DEV_SECRET, evaluate
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import split_instances
from labtools.simulators.families.detection_limit import SCALE, STANDARD
from labtools.simulators.families.detection_limit_expert import detection_limit
from labtools.simulators.families.detection_limit_parts import (
    HELD_OUT_COMBINATIONS,
    LEVEL,
    LOD_K,
    LOQ_K,
    SHOULDER_SHARE,
    UNIT_NOISE,
    VOLUMES_UL,
    method,
)
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, analyte
from labtools.simulators.tasks.scripting import caller, nominal_path_cm
from labtools.simulators.world import SpeciesLibrary

FAMILY = "detection_limit"
INSTANCE = "detection_limit/3/tartrazine+shoulder+200ul"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures))
    assert family.count() == 5 * len(structures) < 1500
    peaks = [s for s in structures if "+peak+" in s]
    assert len(peaks) == len(ANALYTES) * len(VOLUMES_UL)  # every analyte at its peak
    assert any("+shoulder+" in s for s in structures)
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level is LEVEL[3] and cls.budget == LEVEL[3].budget
    assert (cls.method.key, cls.method.where, cls.method.volume_ul) == (
        "tartrazine",
        "shoulder",
        200,
    )
    assert task_class(INSTANCE) is cls  # built once
    name = InstanceName.parse("detection_limit/5/nadh+peak+100ul")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "nadh+peak+100ul")
    for bad in (
        "detection_limit/6/tartrazine+peak+200ul",  # no such level
        "detection_limit/1/tartrazine+peak+150ul",  # no such volume
        "detection_limit/1/tartrazine+flank+200ul",  # no such wavelength
        "detection_limit/1/water+peak+200ul",  # not an analyte
        "detection_limit/1/tartrazine+peak",
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_the_levels_change_noise_and_budget_only(family) -> None:
    noise = [LEVEL[n].noise for n in range(1, 6)]
    assert noise == sorted(noise) and noise[0] > 1.0
    wells = [LEVEL[n].budget.wells for n in range(1, 6)]
    assert wells == sorted(wells, reverse=True)
    statements = set()
    for level in range(1, 6):
        with Session(f"detection_limit/{level}/tartrazine+peak+100ul", secret="words") as s:
            statements.add(s.reset(3)["task"])
    assert len(statements) == 1


def test_held_out_structures_go_to_test_ood_only(family) -> None:
    ood = {i.structure for i in split_instances(family, "test-ood")}
    train = {i.structure for i in split_instances(family, "train")}
    assert ood and train and not ood & train
    assert ood | train == set(family.structures())
    for structure in family.structures():
        m = method(structure)
        combination = (analyte(m.key).kind, m.where, m.volume_ul)
        expected = m.key in HELD_OUT_SPECIES or combination in HELD_OUT_COMBINATIONS
        assert (structure in ood) == expected
    # a held-out combination: each of its parts is in training, the combination is not
    kind, where, volume = next(iter(HELD_OUT_COMBINATIONS))
    held = [s for s in ood if method(s).key not in HELD_OUT_SPECIES]
    assert held and all(f"+{where}+{volume}ul" in s for s in held)
    assert any(analyte(method(s).key).kind == kind for s in train)
    assert any(f"+{where}+{volume}ul" in s for s in train)


def test_the_parts_meet_their_criteria(family) -> None:
    library = SpeciesLibrary.default()
    for structure in family.structures():
        m = method(structure)
        a = analyte(m.key)
        if m.where == "peak":
            assert m.wavelength_nm == a.peak_nm
            continue
        # the shoulder: the first whole nm above the peak where ε falls to a third
        here = float(library[m.key].absorptivity(m.wavelength_nm))
        before = float(library[m.key].absorptivity(m.wavelength_nm - 1.0))
        assert m.wavelength_nm > a.peak_nm and m.wavelength_nm.is_integer()
        assert here <= SHOULDER_SHARE * a.epsilon < before
    paths = [nominal_path_cm(v) for v in VOLUMES_UL]
    assert paths == sorted(paths) and paths[0] > 0.25


def test_the_statement_names_the_method_and_tells_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        observation = session.reset(9)
        statement = observation["task"]
        truth = session.task.truth(session.lab)
        deck = session.call_tool("lh_get_deck", {}).unwrap()
    m = method("tartrazine+shoulder+200ul")
    for said in (f"{m.wavelength_nm:g} nm", "200 µL", "3.3 σ / S", "10 σ / S", "ICH Q2(R1)"):
        assert said in statement
    assert STANDARD in statement and "submit_detection_limit" in statement
    assert not re.search(r"level \d|difficulty|noise", statement.lower())
    shown = statement + str(deck)
    for value in truth.values():
        for text in (f"{value:.3g}", f"{value:.4g}"):
            assert text not in shown
    assert "sample" not in str(deck["labels"]).lower()  # no unknown on this deck


def test_the_truth_is_the_ich_limits_of_the_hidden_noise_and_slope() -> None:
    sigmas, slopes = [], []
    with Session(INSTANCE, secret="truth") as session:
        for seed in range(6):
            session.reset(seed)
            truth = session.task.truth(session.lab)
            assert truth["lod_um"] == pytest.approx(
                LOD_K * truth["sigma_od"] / truth["slope_od_per_um"]
            )
            assert truth["loq_um"] / truth["lod_um"] == pytest.approx(LOQ_K / LOD_K)
            sigmas.append(truth["sigma_od"])
            slopes.append(truth["slope_od_per_um"])
            constants = session.lab.shared["reader_backend"].constants
            # the unit's noise lies in its range over the level's (set anew each episode)
            unit = constants.od_noise_floor / (0.001 * LEVEL[3].noise)
            assert UNIT_NOISE[0] <= unit <= UNIT_NOISE[1]
        session.reset(0)
        again = session.task.truth(session.lab)
    assert again["sigma_od"] == sigmas[0] and again["slope_od_per_um"] == slopes[0]
    assert max(sigmas) / min(sigmas) > 1.3  # the unit's noise is hidden truth that matters
    assert len(set(slopes)) > 1  # the lot's ε and the reader's gain too
    m = method("tartrazine+shoulder+200ul")
    library = m.library_epsilon * nominal_path_cm(200) * 1e-6
    assert all(abs(math.log(s / library)) < 0.2 for s in slopes)


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        um = {"value": 1.0, "unit": "micromolar"}
        for arguments in (
            {"lod": {"value": 0.0, "unit": "micromolar"}, "loq": um, "uncertainty": 0.1},
            {"lod": {"value": -1.0, "unit": "micromolar"}, "loq": um, "uncertainty": 0.1},
            {"lod": um, "loq": um, "uncertainty": -0.1},
            {"lod": um, "loq": um, "uncertainty": 50.0},
            {"lod": um, "loq": um},
            {"lod": um, "loq": "3 µM", "uncertainty": 0.1},
            {"lod": {"value": 1.0, "unit": "microliter"}, "loq": um, "uncertainty": 0.1},
        ):
            result = session.call_tool("submit_detection_limit", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.score().raw == 0.0


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [4], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [4], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [4], k=1, session=session)
    assert first == again == fresh


def test_the_score_is_the_log_crps_of_both_limits() -> None:
    with Session(INSTANCE, secret="score") as session:
        session.reset(2)
        truth = session.task.truth(session.lab)
        call = caller(session)

        def submitted(lod: float, loq: float, sd: float) -> float:
            session.reset(2)
            call(
                "submit_detection_limit",
                lod={"value": lod, "unit": "micromolar"},
                loq={"value": loq, "unit": "micromolar"},
                uncertainty=sd,
            )
            return session.task.score(session.lab)["raw"]

        lod, loq = truth["lod_um"], truth["loq_um"]
        exact = submitted(lod, loq, 0.01)
        assert exact > 0.97
        assert submitted(lod * 1.3, loq * 1.3, 0.01) < math.exp(-0.2 / SCALE)
        assert submitted(lod * 1.3, loq * 1.3, 0.25) > submitted(lod * 1.3, loq * 1.3, 0.01)
        assert submitted(lod, loq * 2.0, 0.05) < submitted(lod, loq, 0.05)  # both scored


def test_more_blanks_estimate_sigma_better() -> None:
    """The expert's protocol on a budget of 12 wells (6 blanks) and of 48 (42): the larger one's
    σ lies nearer the truth, and states a smaller uncertainty."""
    errors: dict[int, list[float]] = {12: [], 48: []}
    stated: dict[int, list[float]] = {12: [], 48: []}
    m = method("tartrazine+peak+100ul")
    with Session("detection_limit/3/tartrazine+peak+100ul", secret="blanks") as session:
        for wells in errors:
            for seed in range(8):
                session.reset(seed)
                sigma, _, relative = detection_limit(
                    caller(session),
                    standard=STANDARD,
                    water="reservoir:A1",
                    wavelength_nm=m.wavelength_nm,
                    volume_ul=100.0,
                    planning_slope=m.library_epsilon * nominal_path_cm(100),
                    wells=wells,
                    reagent_ul=8000.0,
                )
                truth = session.task.truth(session.lab)
                errors[wells].append(abs(math.log(sigma / truth["sigma_od"])))
                stated[wells].append(relative)
    assert np.mean(errors[48]) < np.mean(errors[12])
    assert np.mean(stated[48]) < np.mean(stated[12])


def test_the_shortcuts_miss_where_the_expert_does_not() -> None:
    with Session(INSTANCE, secret=DEV_SECRET) as session:
        errors: dict[str, list[float]] = {}
        for seed in range(4):
            for agent in ("expert", "no_controls", "inversion"):
                session.reset(seed)
                AGENTS[agent](session, seed)
                score = session.task.score(session.lab)
                errors.setdefault(agent, []).append(abs(score["lod_log_error"]))
    assert max(errors["expert"]) < 0.25
    assert min(errors["no_controls"]) > 0.8  # the published floor is far below a blank's σ
    assert np.mean(errors["inversion"]) > np.mean(errors["expert"])
