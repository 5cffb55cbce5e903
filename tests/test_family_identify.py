"""The ``identify`` family: panels of candidates named and built from the analytes, held-out
species only in ``test-ood``; the truth (which candidate, its lot moved by the matrix, the
matrix's humic background) in the world and never in the statement; the library's spectra as a
tool; the log score, its refusals and its controls."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import split_instances
from labtools.simulators.families.identify_parts import (
    LEVEL,
    MATRIX,
    MATRIX_KEY,
    MATRIX_NM,
    SHIFT_TRUNCATE,
    SIZES,
    STATED_SHIFT_NM,
    panel,
)
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.mixture import ALIKE_MAX
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, alike, analyte
from labtools.simulators.families.task import SAMPLE
from labtools.simulators.world import SpeciesLibrary

FAMILY = "identify"
PANEL = "tartrazine+sunset_yellow+quinoline_yellow"
INSTANCE = f"identify/3/{PANEL}"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def _nm(value: float) -> dict[str, object]:
    return {"value": value, "unit": "nanometer"}


def test_instances_are_named_and_built_from_panels(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 66
    assert family.count() == 5 * len(structures) == 330
    assert {len(s.split("+")) for s in structures} == set(SIZES)
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level.number == 3 and task_class(INSTANCE) is cls
    assert cls.candidates == ("tartrazine", "sunset_yellow", "quinoline_yellow")
    name = InstanceName.parse(f"identify/5/{PANEL}")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, PANEL)
    for bad in (
        f"identify/6/{PANEL}",  # no such level
        "identify/1/nadh+nadph+tartrazine",  # NADH and NADPH cannot be told apart
        "identify/1/sunset_yellow+tartrazine+quinoline_yellow",  # not in ANALYTES order
        "identify/1/tartrazine",  # not a panel
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_panel_is_told_apart_and_its_anchors_nearest_lookalikes(family) -> None:
    training = [k for k in ANALYTES if k not in HELD_OUT_SPECIES]
    for structure in family.structures():
        keys = structure.split("+")
        assert keys == sorted(keys, key=ANALYTES.index) and len(keys) in SIZES
        assert all(alike(a, b) <= ALIKE_MAX for a, b in itertools.combinations(keys, 2))
        # some analyte anchors it: the panel is that analyte's nearest look-alikes
        anchors = [
            a
            for a in keys
            if panel(a, len(keys), ANALYTES if a in HELD_OUT_SPECIES else training) == tuple(keys)
        ]
        assert anchors, structure
    # a panel holds its anchor's look-alikes: tartrazine with quinoline yellow (0.94 alike)
    assert panel("tartrazine", 3, ANALYTES)[:1] == ("tartrazine",)
    assert "quinoline_yellow" in panel("tartrazine", 3, ANALYTES)


def test_the_out_of_distribution_split_holds_out_species(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert split_instances(family, "validation") == train == split_instances(family, "test-id")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    assert all(not HELD_OUT_SPECIES & set(i.structure.split("+")) for i in train)
    assert all(HELD_OUT_SPECIES & set(i.structure.split("+")) for i in ood)
    # every held-out species anchors panels of every size; every level trains every size
    for key in HELD_OUT_SPECIES:
        assert {len(i.structure.split("+")) for i in ood if key in i.structure} == set(SIZES)
    for level in family.levels:
        assert {len(i.structure.split("+")) for i in train if i.level == level} == set(SIZES)


def test_the_levels_grow_harder_and_the_matrix_slopes_into_the_uv() -> None:
    for n in range(1, 6):
        assert LEVEL[n].od == SHARED_LEVEL[n].od and LEVEL[n].noise == SHARED_LEVEL[n].noise
        assert LEVEL[n].budget == SHARED_LEVEL[n].budget
    for lower, higher in itertools.pairwise(LEVEL.values()):
        assert higher.shift_nm > lower.shift_nm
        assert higher.interferent_ratio[1] >= lower.interferent_ratio[1]
    assert SHIFT_TRUNCATE * LEVEL[5].shift_nm <= STATED_SHIFT_NM
    humic = SpeciesLibrary.default()[MATRIX_KEY]
    grid = np.arange(330.0, 731.0, 10.0)
    a = np.asarray(humic.absorptivity(grid))
    assert np.all(np.diff(a) < 0)  # no band: a background falling from the UV
    # the exponential of CDOM, S = 0.015 nm⁻¹, within 15 %
    expected = humic.epsilon_max * np.exp(-0.015 * (grid - 254.0))
    assert np.max(np.abs(a / expected - 1.0)) < 0.15
    assert {"molar_mass", "e1pct", "bands", "lambda_max"} <= set(humic.sources)


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise, strength = set(), set(), set(), []
    for level in (1, 5):
        with Session(f"identify/{level}/{PANEL}", secret="wording") as session:
            statements.add(session.reset(0)["task"])
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
            truth = session.task.truth(session.lab)
            strength.append(truth["analyte_um"] * analyte(truth["candidate"]).epsilon)
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}
    assert strength[0] > 5 * strength[1]  # level 5's unknown is far fainter


def test_the_statement_names_the_candidates_and_the_matrix_and_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        observation = session.reset(9)
        statement = observation["task"]
        truth = session.task.truth(session.lab)
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
        library = SpeciesLibrary.default()
        for key in session.task.candidates:
            assert f"{library[key].name} ({key})" in statement
        for text in (MATRIX, SAMPLE, "submit_identify", "library_spectra", "ln(3)", "15 nm"):
            assert text in statement
        assert "river water" in deck and "sample" in deck
        shown = statement + deck
        for name in ("analyte_um", "matrix_um", "matrix_shift_nm", "shift_nm"):
            value = truth[name]
            for text in (f"{value:.3g}", f"{value:.4g}", f"{value * 1e-6:.3e}"):
                assert len(text.replace("-", "").replace(".", "")) < 3 or text not in shown


def test_the_truth_moves_the_unknowns_bands_and_fills_the_matrix() -> None:
    with Session(INSTANCE, secret="truth") as session:
        seen = set()
        for seed in range(8):
            session.reset(seed)
            world = session.lab.shared["world"]
            truth = session.task.truth(session.lab)
            key = truth["candidate"]
            seen.add(key)
            assert abs(truth["matrix_shift_nm"]) <= SHIFT_TRUNCATE * LEVEL[3].shift_nm
            library = SpeciesLibrary.default()[key]
            moved = world.species[key]
            assert moved.lambda_max_nm == pytest.approx(library.lambda_max_nm + truth["shift_nm"])
            assert moved.epsilon_max == pytest.approx(library.epsilon_max * truth["epsilon_factor"])
            # the other candidates as the library or their lot has them: no matrix shift
            for other in session.task.candidates:
                if other != key:
                    lot = world.hidden_truth().get(f"batch/{other}", (1.0, 0.0))
                    assert abs(world.species[other].lambda_max_nm - library_peak(other)) <= (
                        abs(lot[1]) + 1e-9
                    )
            sample, matrix = world.peek(SAMPLE), world.peek(MATRIX)
            assert set(sample.amounts) == {key, MATRIX_KEY} and set(matrix.amounts) == {MATRIX_KEY}
            assert sample.concentration(MATRIX_KEY) == pytest.approx(
                matrix.concentration(MATRIX_KEY)
            )
            # the matrix's share of the unknown's optical density, as the level draws it
            humic = float(SpeciesLibrary.default()[MATRIX_KEY].absorptivity(MATRIX_NM))
            ratio = truth["matrix_um"] * humic / (truth["analyte_um"] * analyte(key).epsilon)
            low, high = LEVEL[3].interferent_ratio
            assert low <= ratio <= high
        assert len(seen) >= 2


def library_peak(key: str) -> float:
    return SpeciesLibrary.default()[key].lambda_max_nm


def test_the_library_tool_gives_the_literatures_spectra_not_the_lots() -> None:
    with Session(INSTANCE, secret="library") as session:
        session.reset(3)
        data = session.call_tool(
            "library_spectra",
            {"candidates": [], "start": _nm(400), "stop": _nm(500), "step": _nm(5)},
        ).unwrap()
        library = SpeciesLibrary.default()
        assert data["wavelengths"][0] == 400.0 and len(data["wavelengths"]) == 21
        assert list(data["spectra"]) == list(session.task.candidates)
        for key, values in data["spectra"].items():
            expected = library[key].absorptivity(np.array(data["wavelengths"]))
            assert np.allclose(values, expected, rtol=1e-4)
            assert data["peaks"][key]["epsilon"] == pytest.approx(max(values))
        refused = [
            {"candidates": ["nadh"], "start": _nm(400), "stop": _nm(500), "step": _nm(5)},
            {"candidates": [], "start": _nm(500), "stop": _nm(400), "step": _nm(5)},
            {"candidates": [], "start": _nm(100), "stop": _nm(500), "step": _nm(5)},
            {"candidates": [], "start": _nm(400), "stop": _nm(500), "step": _nm(0.1)},
            {
                "candidates": [],
                "start": {"value": 400, "unit": "gram"},
                "stop": _nm(500),
                "step": _nm(5),
            },
        ]
        for arguments in refused:
            result = session.call_tool("library_spectra", arguments)
            assert not result.ok and result.error is not None, arguments
        assert not session.done


def test_a_submission_that_is_no_distribution_is_refused_and_the_episode_goes_on() -> None:
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        for probabilities in (
            {"tartrazine": 0.5, "sunset_yellow": 0.2, "quinoline_yellow": 0.2},  # adds to 0.9
            {"tartrazine": 0.0, "sunset_yellow": 0.0, "quinoline_yellow": 0.0},
            {"tartrazine": 1.5, "sunset_yellow": -0.5, "quinoline_yellow": 0.0},
            {"tartrazine": 0.5, "sunset_yellow": 0.5},  # a candidate missing
            {"tartrazine": 0.5, "sunset_yellow": 0.5, "quinoline_yellow": 0.0, "nadh": 0.0},
        ):
            result = session.call_tool("submit_identify", {"probabilities": probabilities})
            assert not result.ok and result.error is not None, probabilities
        assert session.task.submission is None and not session.done
        even = {k: 1 / 3 for k in session.task.candidates}  # adds to 1 within rounding
        assert session.call_tool("submit_identify", {"probabilities": even}).ok


@pytest.mark.parametrize(
    ("share", "score"),
    [(1.0, 1.0), (1 / 3, 0.0), (1 / math.sqrt(3), 0.5), (0.1, 0.0), (0.0, 0.0)],
)
def test_the_log_score_is_zero_at_even_odds_and_one_at_certainty(
    share: float, score: float
) -> None:
    with Session(INSTANCE, secret="score") as session:
        session.reset(1)
        truth = session.task.truth(session.lab)["candidate"]
        others = [k for k in session.task.candidates if k != truth]
        given = {truth: share, **{k: (1.0 - share) / len(others) for k in others}}
        session.call_tool("submit_identify", {"probabilities": given}).unwrap()
        reward = session.score()
        assert reward.components["outcome"] == pytest.approx(score, abs=1e-9)
        assert reward.components["probability"] == pytest.approx(share)


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [4], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [4], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [4], k=1, session=session)
    assert first == again == fresh


def test_the_expert_blanks_the_matrix_and_the_shortcuts_skip_it() -> None:
    """The expert runs every control and is sure of the right candidate; the experiment
    without controls reads no matrix blank and no replicate; the naive reads no spectrum."""
    with Session(f"identify/2/{PANEL}", secret=DEV_SECRET) as session:
        expert = run_episode(session, "expert", 5)
        assert expert.components["process"] == 1.0 and expert.components["right"] == 1.0
        assert expert.components["probability"] > 0.99
        uncontrolled = run_episode(session, "no_controls", 5)
        assert uncontrolled.components["process/matrix_blank"] == 0.0
        assert uncontrolled.components["process/replicates"] == 0.0
        naive = run_episode(session, "naive", 5)
        assert naive.components["process/spectrum"] == 0.0
        assert sorted(session.task.submission.values()) == [0.0, 0.0, 1.0]
