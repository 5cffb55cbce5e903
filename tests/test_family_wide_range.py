"""The ``wide_range`` family: a cofactor in samples spanning decades, named and built from the
cofactors, sample counts, spreads and matrices, FMN only in ``test-ood``; the truth (the
samples, the lot) in the world and never in the statement or on the deck; refusals,
determinism; and the question itself: no one read mode covers the span, the expert reads each
sample by the mode that suits it, and without controls the truth (not only the rubric) holds
the score down."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.process import analyse
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import played, split_instances
from labtools.simulators.families.estimates import submission
from labtools.simulators.families.fluorimetry_expert import MAX_OD
from labtools.simulators.families.fluorimetry_parts import matrix_od
from labtools.simulators.families.parts import HELD_OUT_SPECIES, analyte
from labtools.simulators.families.task import WELL_UL
from labtools.simulators.families.wide_range_expert import BRIGHT_OD
from labtools.simulators.families.wide_range_parts import (
    COFACTORS,
    LEVEL,
    SAMPLE_SLOTS,
    STANDARD,
)
from labtools.simulators.tasks.scripting import nominal_path_cm
from labtools.simulators.world import SpeciesLibrary

FAMILY = "wide_range"
STRUCTURE = "nadh+6+even+nad"
INSTANCE = f"{FAMILY}/3/{STRUCTURE}"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 24 and family.count() == 120
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level.number == 3 and task_class(INSTANCE) is cls
    assert (cls.analyte_key, cls.count, cls.spread, cls.matrix_key) == ("nadh", 6, "even", "nad")
    assert task_class(f"{FAMILY}/1/nadph+4+ends+water").matrix_key is None
    name = InstanceName.parse(INSTANCE)
    assert (name.family, name.level, name.structure) == (FAMILY, 3, STRUCTURE)
    for bad in (
        f"{FAMILY}/6/{STRUCTURE}",
        f"{FAMILY}/3/nadh+5+even+nad",  # four or six samples
        f"{FAMILY}/3/fluorescein+4+even+water",  # not a cofactor
        f"{FAMILY}/3/nadh+4+middle+water",
        f"{FAMILY}/3/nadh",
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_fmn_is_only_in_the_out_of_distribution_split(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    assert {i.structure.split("+")[0] for i in ood} == {"fmn"} <= HELD_OUT_SPECIES
    assert {i.structure.split("+")[0] for i in train} == {"nadh", "nadph"}
    assert len({i.structure for i in ood}) == 8


def test_the_parts_meet_their_criteria() -> None:
    library = SpeciesLibrary.default()
    for key in COFACTORS:
        assert analyte(key).kind == "cofactor" and library[key].fluorescence is not None
    # NAD+ is a decoy: it reads at none of the cofactors' wavelengths
    for wavelength in (340.0, 445.0, 460.0, 530.0):
        assert float(library["nad"].absorptivity(wavelength)) < 1.0
    # the levels widen the span at both ends and make the reader noisier
    for low, high in zip((1, 2, 3, 4), (2, 3, 4, 5), strict=True):
        assert LEVEL[low].od[0] > LEVEL[high].od[0] and LEVEL[low].od[1] < LEVEL[high].od[1]
        assert LEVEL[low].noise <= LEVEL[high].noise
        assert LEVEL[low].budget.wells >= LEVEL[high].budget.wells
    assert LEVEL[1].od[1] < 2.0 < LEVEL[5].od[1]  # from inside the 0.1-2.0 OD window to past it
    assert 3.5 < math.log10(LEVEL[5].od[1] / LEVEL[5].od[0]) < 4.5  # four decades
    per_um = analyte("nadh").epsilon * nominal_path_cm(WELL_UL) * 1e-6
    assert 0.04 < LEVEL[5].od[0] / per_um < 0.06 and LEVEL[5].od[1] / per_um > 500.0


def test_no_one_read_mode_covers_the_span() -> None:
    """The faintest samples read under the reader's 0.001 OD floor; the expert's absorbance
    starts at BRIGHT_OD; fluorescence stays straight only far below it (its own inner
    filter), so each mode must be chosen and calibrated for the samples it suits."""
    for key in ("nadh", "fmn"):
        per_um = analyte(key).epsilon * nominal_path_cm(WELL_UL) * 1e-6
        straight_um = MAX_OD / matrix_od(key, key) * 1e6
        assert LEVEL[5].od[0] < 0.001 < BRIGHT_OD
        assert straight_um * 20.0 < BRIGHT_OD / per_um


@pytest.mark.parametrize("spread", ["even", "ends"])
def test_the_samples_spread_as_the_structure_says(spread: str) -> None:
    instance = f"{FAMILY}/5/nadh+6+{spread}+water"
    low, high = LEVEL[5].od
    per_um = analyte("nadh").epsilon * nominal_path_cm(WELL_UL) * 1e-6
    with Session(instance, secret="spread") as session:
        for seed in (0, 1, 2):
            session.reset(seed)
            truth = session.task.truth(session.lab)
            ods = sorted(truth[f"sample_{i}_um"] * per_um for i in range(1, 7))
            assert low <= ods[0] and ods[-1] <= high
            if spread == "ends":
                assert ods[2] <= 10.0 * low and ods[3] >= high / 10.0
            else:  # one in each sixth of the logarithm
                edges = [low * (high / low) ** (j / 6) for j in range(7)]
                assert all(edges[j] <= ods[j] <= edges[j + 1] for j in range(6))


def test_the_statement_names_the_parts_and_no_truth() -> None:
    statements = set()
    for level in (1, 5):
        with Session(f"{FAMILY}/{level}/{STRUCTURE}", secret="wording") as session:
            observation = session.reset(4)
            statements.add(observation["task"])
            truth = session.task.truth(session.lab)
            deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
            shown = observation["task"] + deck
            for name, value in truth.items():
                texts = [f"{value:.3g}", f"{value:.4g}"]
                if name.endswith("_um"):
                    texts.append(f"{value * 1e-6:.3e}")
                for text in texts:
                    assert text not in shown, (name, text)
    assert len(statements) == 1  # a level changes the physics, never the wording
    (text,) = statements
    for said in ("NADH", "NAD+", "340 nm", "460 nm", "submit_wide_range", "sample_6", STANDARD):
        assert said in text
    assert "reservoir:A3 to reservoir:A8" in text


def test_the_lot_is_in_the_worlds_library_and_the_samples_hold_what_was_drawn() -> None:
    with Session(INSTANCE, secret="lot") as session:
        session.reset(2)
        truth = session.task.truth(session.lab)
        world = session.lab.shared["world"]
        drawn, listed = world.species["nadh"], SpeciesLibrary.default()["nadh"]
        assert drawn.epsilon_max == pytest.approx(listed.epsilon_max * truth["epsilon_factor"])
        assert drawn.fluorescence.quantum_yield == pytest.approx(
            listed.fluorescence.quantum_yield * truth["yield_factor"]
        )
        for i, container in enumerate(SAMPLE_SLOTS, start=1):
            amounts = world.peek(container).amounts
            assert set(amounts) == {"nadh", "nad"}
            um = amounts["nadh"] / world.peek(container).volume_ul * 1e3  # nmol per µL
            assert um == pytest.approx(truth[f"sample_{i}_um"], rel=1e-6)
        assert set(world.peek(STANDARD).amounts) == {"nadh"}


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    instance = f"{FAMILY}/2/nadh+4+ends+water"
    names = [f"sample_{i}" for i in range(1, 5)]
    good = submission(names, [1.0] * 4, [1.0] * 4, "micromolar")["estimates"]
    with Session(instance, secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(SAMPLE_SLOTS[0]).volume_ul
        for estimates in (
            [good[0], {**good[1], "concentration": {"value": 0, "unit": "molar"}}, *good[2:]],
            [{**good[0], "uncertainty": {"value": -1.0, "unit": "micromolar"}}, *good[1:]],
            [*good[:3], {**good[3], "concentration": {"value": 1.0, "unit": "metre"}}],
            good[:3],
            [*good, good[0]],
            [{**good[0], "sample": "sample_5"}, *good[1:]],
        ):
            result = session.call_tool("submit_wide_range", {"estimates": estimates})
            assert not result.ok and result.error is not None
            assert result.error["field"].startswith("/estimates")
        assert not session.call_tool("submit_wide_range", {"concentrations": {}}).ok
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(SAMPLE_SLOTS[0]).volume_ul == before
        assert session.call_tool("submit_wide_range", {"estimates": good[::-1]}).ok
        assert session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [5], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [5], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [5], k=1, session=session)
    assert first == again == fresh


def test_the_expert_reads_each_sample_by_the_mode_that_suits_it() -> None:
    """A bright sample is read by absorbance and never by fluorescence after the survey; a
    faint one by fluorescence, beside that mode's standards."""
    instance = f"{FAMILY}/5/nadh+6+ends+water"
    with Session(instance, secret=DEV_SECRET) as session:
        run_episode(session, "expert", 3)
        truth = session.task.truth(session.lab)
        episode = analyse(session.lab.journal.events(), resolve=session.lab.data)
    per_um = analyte("nadh").epsilon * nominal_path_cm(WELL_UL) * 1e-6
    survey = sorted({r.seq for r in episode.readings})[:2]  # its absorbance and fluorescence
    for i, container in enumerate(SAMPLE_SLOTS, start=1):
        later = {r.mode for r in episode.of([container]) if r.seq not in survey}
        od = truth[f"sample_{i}_um"] * per_um
        if od > 2.0 * BRIGHT_OD:
            assert later == {"absorbance"}
        elif od < BRIGHT_OD / 2.0:
            assert later == {"fluorescence"}


def _outcomes(level: int, agent: str, seeds: range) -> list[float]:
    family = load_family(FAMILY)
    instances = [str(i) for i in split_instances(family, "train") if i.level == level]
    out = []
    for seed in seeds:
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            out.append(float(run_episode(session, agent, seed).components["outcome"]))
    return out


def test_without_controls_the_truth_holds_the_outcome_down() -> None:
    """The outcome before the process rubric: the expert's calibrations earn it; one
    absorbance read per sample with the library's ε and the nominal path does not (the faint
    samples are invisible to it, the lot moves the bright ones)."""
    seeds = range(12)
    expert = _outcomes(2, "expert", seeds)
    blind = _outcomes(2, "no_controls", seeds)
    assert statistics.mean(expert) > 0.85 and min(expert) > 0.6
    assert statistics.mean(blind) < 0.3
