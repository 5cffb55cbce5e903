"""The ``fluor_pka`` family: a fluorescent pH probe (pyranine) in the equilibrium family's buffer
sets, screened or not by a dye that does not fluoresce, held-out screens only in ``test-ood``;
the truth (the apparent pKa, the buffers' real pH, the stock, the lot) in the world and never in
the statement or on the deck; refusals, determinism, and what fluorescence adds: a stock read
1 in 10 saturates or is bent by its own inner filter, or reads near the autofluorescence, so
that the experiment without controls misses on its own while the expert's dilution and blanked
excitation spectra do not."""

from __future__ import annotations

import json
import statistics

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import played, split_instances
from labtools.simulators.families.equilibrium_parts import (
    BUFFER_SETS,
    INDICATOR,
    PKA_SPREAD,
    buffers_fit,
    indicator,
    screens_of,
)
from labtools.simulators.families.fluor_pka import (
    HELD_OUT_COMBINATIONS,
    LEVEL,
    PROBES,
    probe_screens,
)
from labtools.simulators.families.fluor_pka_expert import EMISSION_NM, EXCITATION_NM
from labtools.simulators.families.parts import HELD_OUT_SPECIES, analyte
from labtools.simulators.tasks.scripting import batch
from labtools.simulators.world import SpeciesLibrary

FAMILY = "fluor_pka"
STRUCTURE = "pyranine+tartrazine+ph3-10"
INSTANCE = f"{FAMILY}/3/{STRUCTURE}"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_probes_screens_and_buffers(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert PROBES == ("pyranine",)
    screens = probe_screens("pyranine")
    fitting = [b for b in BUFFER_SETS if buffers_fit("pyranine", b)]
    assert len(structures) == len(set(structures)) == (1 + len(screens)) * len(fitting) == 40
    assert family.count() == 200
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level.number == 3 and task_class(INSTANCE) is cls
    assert (cls.indicator_key, cls.screen_key) == ("pyranine", "tartrazine")
    assert list(cls.buffer_ph.values()) == list(BUFFER_SETS["ph3-10"])
    name = InstanceName.parse(INSTANCE)
    assert (name.family, name.level, name.structure) == (FAMILY, 3, STRUCTURE)
    for bad in (
        f"{FAMILY}/6/{STRUCTURE}",
        f"{FAMILY}/3/pyranine+ph2-9",  # no buffer far enough above the pKa
        f"{FAMILY}/3/phenol_red+ph3-10",  # does not fluoresce
        f"{FAMILY}/3/pyranine+fluorescein+ph3-10",  # a fluorescent screen
        f"{FAMILY}/3/pyranine",
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_held_out_screens_and_combinations_are_only_in_the_ood_split(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    held = {i.structure for i in ood}
    assert len(held) == 10  # allura red and TNB screens (8), p-nitroaniline with sparse buffers
    for structure in held:
        keys = structure.split("+")
        sparse = BUFFER_SETS[keys[-1]][1] - BUFFER_SETS[keys[-1]][0] > 1
        assert HELD_OUT_SPECIES & set(keys) or (
            (analyte(keys[1]).kind, "sparse") in HELD_OUT_COMBINATIONS and sparse
        )
    trained = {k for i in train for k in i.structure.split("+")}
    assert not trained & HELD_OUT_SPECIES and "p_nitroaniline" in trained


def test_the_parts_meet_their_criteria() -> None:
    library = SpeciesLibrary.default()
    for key in PROBES:
        species = library[key]
        assert species.fluorescence is not None and set(species.forms) == {"acid", "base"}
        assert all(ex < EMISSION_NM for ex in EXCITATION_NM)
        peaks = indicator(key).peak_nm
        assert min(EXCITATION_NM) < peaks["acid"] < peaks["base"] < max(EXCITATION_NM)
        for screen in probe_screens(key):
            assert screen in screens_of(key) and library[screen].fluorescence is None
    # fluorescein fluoresces but the library gives it one form: no probe
    assert "fluorescein" not in PROBES
    # every level's stock is either too strong for a 1 in 10 read or faint, never both
    assert all(LEVEL[n].od[0] >= 1.0 for n in (1, 2, 3))
    assert all(LEVEL[n].od[1] <= 0.005 for n in (4, 5))
    assert [LEVEL[n].budget.wells for n in (1, 2, 3, 4, 5)] == [96, 72, 48, 32, 24]


def test_the_statement_names_the_parts_and_no_truth() -> None:
    statements = set()
    for level in (1, 5):
        with Session(f"{FAMILY}/{level}/{STRUCTURE}", secret="wording") as session:
            observation = session.reset(4)
            statements.add(observation["task"])
            truth = session.task.truth(session.lab)
            deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
            shown = observation["task"] + deck
            for text in (f"{truth['pka']:.3f}", f"{truth['pka']:.4g}"):
                assert text not in shown
            for value in (truth["indicator_um"], truth["screen_um"]):
                for text in (f"{value:.3g}", f"{value:.4g}", f"{value * 1e-6:.3e}"):
                    assert text not in shown
            for factor in (truth["epsilon_factor"], truth["yield_factor"]):
                assert f"{factor:.4f}" not in shown
    assert len(statements) == 1  # a level changes the physics, never the wording
    (text,) = statements
    for said in ("Pyranine", "Tartrazine", "403 nm", "455 nm", "512 nm", "submit_fluor_pka"):
        assert said in text
    assert "reader_read_fluorescence" in text and "does not fluoresce" in text
    assert "7.3" not in text  # the library's pKa is not given


def test_the_lot_and_the_apparent_pka_are_in_the_worlds_library() -> None:
    with Session(INSTANCE, secret="lot") as session:
        session.reset(2)
        truth = session.task.truth(session.lab)
        world = session.lab.shared["world"]
        drawn = world.species["pyranine"]
        listed = SpeciesLibrary.default()["pyranine"]
        assert drawn.pka == pytest.approx(truth["pka"])
        assert abs(truth["pka"] - listed.pka) <= 2.5 * PKA_SPREAD
        assert drawn.fluorescence.quantum_yield == pytest.approx(
            min(1.0, listed.fluorescence.quantum_yield * truth["yield_factor"])
        )
        assert drawn.epsilon_max == pytest.approx(listed.epsilon_max * truth["epsilon_factor"])
        assert set(world.peek(INDICATOR).amounts) == {"pyranine", "tartrazine"}


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(INDICATOR).volume_ul
        for arguments in (
            {"pka": 15.0, "uncertainty": 0.1},
            {"pka": 7.0, "uncertainty": -0.1},
            {"pka": "7", "uncertainty": 0.1},
            {"pka": 7.0},
        ):
            result = session.call_tool("submit_fluor_pka", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(INDICATOR).volume_ul == before


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [5], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [5], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [5], k=1, session=session)
    assert first == again == fresh


def test_a_one_in_ten_read_of_a_strong_stock_saturates() -> None:
    """At level 3 the stock 1 in 10 in the most basic buffer reads past the detector's ceiling
    at the reader's own gain."""
    with Session(f"{FAMILY}/3/pyranine+ph3-10", secret="saturation") as session:
        session.reset(1)
        call = session.call_tool
        moves = [("reservoir:A10", "plate_1:A1", 180.0), (INDICATOR, "plate_1:A1", 20.0)]
        assert call("lh_transfer", batch(moves, "new", channels=[0])).ok
        assert call("lh_move_plate", {"plate": "plate_1", "destination": "reader"}).ok
        data = call(
            "reader_read_fluorescence",
            {
                "plate": "plate_1",
                "wells": ["A1"],
                "excitation_wavelength": {"value": 455, "unit": "nanometer"},
                "emission_wavelength": {"value": EMISSION_NM, "unit": "nanometer"},
                "gain": 0,
                "focal_height": {"value": 0, "unit": "millimeter"},
            },
        ).unwrap()
        assert data["saturated"] == ["A1"]


def _outcomes(level: int, agent: str, seeds: range) -> list[float]:
    family = load_family(FAMILY)
    instances = [str(i) for i in split_instances(family, "train") if i.level == level]
    out = []
    for seed in seeds:
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            reward = run_episode(session, agent, seed)
            out.append(float(reward.components["outcome"]))
    return out


@pytest.mark.parametrize(("level", "most"), [(1, 0.35), (3, 0.35), (5, 0.45)])
def test_the_experiment_without_controls_misses_on_its_own(level: int, most: float) -> None:
    """Too strong a stock (levels 1-3: saturation, its own inner filter) or too faint a one
    (level 5: the autofluorescence, the noise): the outcome itself, not only the rubric, holds
    the experiment without controls down, and the expert's dilution and blanks earn it."""
    seeds = range(8)
    assert statistics.fmean(_outcomes(level, "no_controls", seeds)) < most
    assert statistics.fmean(_outcomes(level, "expert", seeds)) > 0.7
