"""The ``range`` family: instances named and built from an analyte and a volume; held-out parts
only in ``test-ood``; the truth (the reader unit's stray light) in the world and never in what
the agent sees; refusals; determinism; the expert's fit reading the stray light the readings
hold whatever the pipetting delivered, where the package's median unit does not."""

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
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, analyte
from labtools.simulators.families.range import SCALE, STANDARD
from labtools.simulators.families.range_expert import fit_stray
from labtools.simulators.families.range_parts import (
    HELD_OUT_COMBINATIONS,
    LEVEL,
    REF_SHARE,
    SHORTFALL,
    VOLUMES_UL,
    linear_limit_od,
    qualification,
)
from labtools.simulators.tasks.scripting import caller
from labtools.simulators.world import SpeciesLibrary

FAMILY = "range"
INSTANCE = "range/3/tartrazine+200ul"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures))
    assert family.count() == 5 * len(structures) < 1500
    assert len(structures) == len(ANALYTES) * len(VOLUMES_UL)  # every analyte has a reference
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level is LEVEL[3] and cls.budget == LEVEL[3].budget
    assert (cls.qualification.key, cls.qualification.volume_ul) == ("tartrazine", 200)
    assert task_class(INSTANCE) is cls  # built once
    name = InstanceName.parse("range/5/nadh+100ul")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "nadh+100ul")
    for bad in (
        "range/6/tartrazine+200ul",  # no such level
        "range/1/tartrazine+150ul",  # no such volume
        "range/1/water+200ul",  # not an analyte
        "range/1/tartrazine",
        "range/1/tartrazine+200ul+peak",
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_the_levels_change_noise_and_budget_only() -> None:
    noise = [LEVEL[n].noise for n in range(1, 6)]
    assert noise == sorted(noise) and noise[-1] > noise[0]
    wells = [LEVEL[n].budget.wells for n in range(1, 6)]
    assert wells == sorted(wells, reverse=True)
    statements = set()
    for level in range(1, 6):
        with Session(f"range/{level}/tartrazine+100ul", secret="words") as s:
            statements.add(s.reset(3)["task"])
    assert len(statements) == 1


def test_held_out_structures_go_to_test_ood_only(family) -> None:
    ood = {i.structure for i in split_instances(family, "test-ood")}
    train = {i.structure for i in split_instances(family, "train")}
    assert ood and train and not ood & train
    assert ood | train == set(family.structures())
    for structure in family.structures():
        q = qualification(structure)
        expected = (
            q.key in HELD_OUT_SPECIES or (analyte(q.key).kind, q.volume_ul) in HELD_OUT_COMBINATIONS
        )
        assert (structure in ood) == expected
    kind, volume = next(iter(HELD_OUT_COMBINATIONS))
    held = [s for s in ood if qualification(s).key not in HELD_OUT_SPECIES]
    assert held and all(s.endswith(f"+{volume}ul") for s in held)
    assert any(analyte(qualification(s).key).kind == kind for s in train)
    assert any(s.endswith(f"+{volume}ul") for s in train)


def test_the_parts_meet_their_criteria(family) -> None:
    library = SpeciesLibrary.default()
    for structure in family.structures():
        q = qualification(structure)
        a = analyte(q.key)
        assert q.peak_nm == a.peak_nm
        # the reference: the first whole nm above the peak where ε falls to REF_SHARE
        here = float(library[q.key].absorptivity(q.ref_nm))
        before = float(library[q.key].absorptivity(q.ref_nm - 1.0))
        assert q.ref_nm > q.peak_nm and q.ref_nm.is_integer()
        assert here <= REF_SHARE * a.epsilon < before
    # the linear range's top: where the shortfall is SHORTFALL of the absorbance
    for s in (1e-5, 5e-5, 1e-3):
        top = linear_limit_od(s)
        assert math.log10(1.0 + s * 10.0**top) == pytest.approx(SHORTFALL * top, rel=1e-6)
    assert linear_limit_od(1e-5) > linear_limit_od(5e-5) > linear_limit_od(1e-3)


def test_the_statement_names_the_question_and_tells_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        observation = session.reset(9)
        statement = observation["task"]
        truth = session.task.truth(session.lab)
        deck = session.call_tool("lh_get_deck", {}).unwrap()
    q = qualification("tartrazine+200ul")
    for said in (f"{q.peak_nm:g} nm", "200 µL", "(T + s) / (1 + s)", "5%", "4.0 OD"):
        assert said in statement
    assert STANDARD in statement and "submit_range" in statement
    assert not re.search(r"level \d|difficulty|noise|reference wavelength", statement.lower())
    shown = statement + str(deck)
    for value in truth.values():
        for text in (f"{value:.3g}", f"{value:.4g}", f"{value:.2e}"):
            assert text not in shown


def test_the_truth_is_the_units_stray_light_at_the_peak() -> None:
    values = []
    with Session(INSTANCE, secret="truth") as session:
        for seed in range(8):
            session.reset(seed)
            truth = session.task.truth(session.lab)
            reader = session.lab.shared["reader_backend"].truth
            assert truth["stray_light"] >= reader.stray_light  # the UV rise only adds
            assert truth["stray_light"] < 1.2 * reader.stray_light  # little at 426 nm
            assert truth["linear_limit_od"] == pytest.approx(linear_limit_od(truth["stray_light"]))
            values.append(truth["stray_light"])
        session.reset(0)
        assert session.task.truth(session.lab)["stray_light"] == values[0]
    assert max(values) / min(values) > 1.5  # the unit's stray light is hidden truth that matters
    assert all(8e-6 < v < 7e-5 for v in values)


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        for arguments in (
            {"stray_light": 0.0, "uncertainty": 0.1},
            {"stray_light": -1e-5, "uncertainty": 0.1},
            {"stray_light": 0.5, "uncertainty": 0.1},
            {"stray_light": 1e-5, "uncertainty": -0.1},
            {"stray_light": 1e-5, "uncertainty": 50.0},
            {"stray_light": 1e-5},
            {"stray_light": "1e-5", "uncertainty": 0.1},
            {"stray_light": float("nan"), "uncertainty": 0.1},
        ):
            result = session.call_tool("submit_range", arguments)
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


def test_the_score_is_the_log_crps_of_s() -> None:
    with Session(INSTANCE, secret="score") as session:
        session.reset(2)
        s = session.task.truth(session.lab)["stray_light"]
        call = caller(session)

        def submitted(value: float, sd: float) -> float:
            session.reset(2)
            call("submit_range", stray_light=value, uncertainty=sd)
            return session.task.score(session.lab)["raw"]

        assert submitted(s, 0.01) > 0.97
        assert submitted(s * 1.5, 0.01) < math.exp(-0.35 / SCALE)
        assert submitted(s * 1.5, 0.4) > submitted(s * 1.5, 0.01)


def test_the_fit_reads_s_from_the_shortfall_whatever_the_dilution() -> None:
    """Noise-free readings of wells whose concentrations are off by up to 20 % (a careless
    dilution): the two-wavelength fit still returns the s that made them."""
    rng = np.random.default_rng(0)
    for s in (1e-5, 4e-5):
        planned = np.array([0.6, 1.0, 1.4, 1.8, *np.linspace(3.2, 3.75, 12)])
        absorbance = planned * rng.uniform(0.8, 1.2, planned.size)
        offset = rng.uniform(-0.004, 0.004, planned.size) + 0.04

        def read(a: np.ndarray, s: float = s) -> np.ndarray:
            return -np.log10((10.0**-a + s) / (1.0 + s))

        peak, ref = read(absorbance + offset), read(absorbance * 0.5 + offset)
        tiny = np.full(planned.size, 1e-8)
        found, sd = fit_stray(peak, tiny, ref, tiny)
        assert abs(math.log(found / s)) < 0.05 and 0.0 < sd < 0.2


def test_the_shortcuts_miss_where_the_expert_does_not() -> None:
    with Session(INSTANCE, secret=DEV_SECRET) as session:
        errors: dict[str, list[float]] = {}
        for seed in range(4):
            for agent in ("expert", "no_controls", "naive"):
                session.reset(seed)
                AGENTS[agent](session, seed)
                score = session.task.score(session.lab)
                errors.setdefault(agent, []).append(abs(score["log_error"]))
    assert max(errors["expert"]) < 0.3
    assert np.mean(errors["no_controls"]) > np.mean(errors["expert"])
    assert min(errors["naive"]) > 1.0  # the top reading is no plateau
