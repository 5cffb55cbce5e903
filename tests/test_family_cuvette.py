"""The ``cuvette`` family: instances named after one analyte; the held-out species only in
``test-ood``; a level changing the spectrometer's noise, not the wording; the truth never in what
the agent sees; quantify's refusals; determinism; the rubric read from the spectrometer's calls;
the calibration (not the rubric alone) earning the outcome."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labtools.lab import Lab
from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.process import analyse
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import played, split_instances
from labtools.simulators.families.cuvette import PATH_CM, CuvetteTask
from labtools.simulators.families.cuvette_parts import LEVEL, measurements
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, analyte
from labtools.simulators.families.quantify import STANDARD, QuantifyTask
from labtools.simulators.families.task import SAMPLE
from labtools.simulators.published import detector_key
from labtools.simulators.spectrometer.profiles import detector_of
from labtools.simulators.tasks.scripting import batch

FAMILY = "cuvette"
INSTANCE = "cuvette/3/tartrazine"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    assert family.structures() == list(ANALYTES)
    assert family.count() == 5 * len(ANALYTES) == 120
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and issubclass(cls, CuvetteTask) and issubclass(cls, QuantifyTask)
    assert cls.analyte_key == "tartrazine" and cls.interferent_key is None
    assert cls.level.od == LEVEL[3].od and cls.budget == LEVEL[3].budget
    for bad in ("cuvette/6/tartrazine", "cuvette/1/tartrazine+allura_red", "cuvette/1/water"):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_the_out_of_distribution_split_holds_out_the_shared_species(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert {i.structure for i in ood} == set(HELD_OUT_SPECIES)
    assert not {i.structure for i in train} & HELD_OUT_SPECIES
    assert len(train) + len(ood) == family.count()


def test_levels_lie_further_over_range_with_a_noisier_detector() -> None:
    for low, high in zip(LEVEL.values(), list(LEVEL.values())[1:], strict=False):
        assert high.od[0] >= low.od[0] and high.od[1] > low.od[1]
        assert high.noise >= low.noise and high.budget.calls < low.budget.calls
    assert LEVEL[1].od[0] < 1.0 < 50.0 < LEVEL[5].od[1]  # from in range to far over it
    # the level's factor reaches the spectrometer's detector: every count's noise scales alike
    noisy, quiet = (task_class(f"cuvette/{n}/tartrazine")() for n in (5, 1))
    five, one = (
        detector_of(t.build_lab(0).shared["world"].profile, "FLAME-S") for t in (noisy, quiet)
    )
    assert five.dark_noise_counts == pytest.approx(3.0 * one.dark_noise_counts)
    assert five.snr_full_signal == pytest.approx(one.snr_full_signal / 3.0)
    assert detector_key("FLAME-S", "dark_noise") in quiet.build_lab(0).shared["world"].profile


def test_the_statement_names_the_cuvette_and_tells_no_truth() -> None:
    statements = set()
    for level in (1, 5):
        with Session(f"cuvette/{level}/nadh", secret="leak") as session:
            observation = session.reset(4)
            statements.add(observation["task"])
            truth = session.task.truth(session.lab)
            deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
            shown = observation["task"] + deck
            for value in truth.values():
                for text in (f"{value:.3g}", f"{value:.4g}", f"{value * 1e-6:.3e}"):
                    assert text not in shown
            assert "spectrometer" in observation["task"] and "cuvette" in observation["task"]
            assert "submit_quantify" in observation["task"]
    assert len(statements) == 1  # a level changes the physics, never the wording


def test_the_sample_is_drawn_over_one_centimetre() -> None:
    for level, spec in LEVEL.items():
        with Session(f"cuvette/{level}/brilliant_blue", secret="draw") as session:
            for seed in range(3):
                session.reset(seed)
                um = session.task.truth(session.lab)["analyte_um"]
                od = um * 1e-6 * analyte("brilliant_blue").epsilon * PATH_CM
                assert spec.od[0] <= od <= spec.od[1]


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(SAMPLE).volume_ul
        for arguments in (
            {"concentration": {"value": -1.0, "unit": "micromolar"}},
            {
                "concentration": {"value": 5.0, "unit": "micromolar"},
                "uncertainty": {"value": 1.0, "unit": "second"},
            },
            {
                "concentration": {"value": 50.0, "unit": "molar"},
                "uncertainty": {"value": 1.0, "unit": "micromolar"},
            },
        ):
            result = session.call_tool("submit_quantify", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(SAMPLE).volume_ul == before
        ok = {
            "concentration": {"value": 5.0, "unit": "micromolar"},
            "uncertainty": {"value": 0.5, "unit": "micromolar"},
        }
        assert session.call_tool("submit_quantify", ok).ok and session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [5], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [5], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [5], k=1, session=session)
    assert first == again == fresh


def test_the_rubric_reads_the_spectrometers_calls() -> None:
    """The expert's measurements, paired with the cuvette's nominal contents: a dark and a water
    reference behind each, the dead volume's carry-over a trace, three standard levels, three
    sample fillings, none of the plate reader's readings."""
    with Session(INSTANCE, secret=DEV_SECRET) as session:
        reward = run_episode(session, "expert", 2)
        episode = analyse(session.lab.journal.events())
    assert reward.components["process"] == 1.0
    assert not episode.readings  # no plate was read
    found = measurements(episode, analyte("tartrazine").peak_nm)
    assert all(m.dark and m.reference is not None for m in found)
    standards = [m for m in found if m.holds(STANDARD)]
    samples = [m for m in found if m.holds(SAMPLE) and not m.holds(STANDARD)]
    assert len(standards) == 3 and len({m.fill for m in samples}) >= 3
    assert all(m.peak is not None and 0.05 < m.peak < 2.0 for m in standards)


def test_the_calibration_earns_the_outcome(family) -> None:
    """Seeds 0-7 of level 2's training structures: the expert's outcome (before the rubric) is
    high; the sample measured neat with the library's ε earns far less of it."""
    instances = [str(i) for i in split_instances(family, "train") if i.level == 2]
    outcome: dict[str, list[float]] = {"expert": [], "no_controls": []}
    for seed in range(8):
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            for agent in outcome:
                reward = run_episode(session, agent, seed)
                outcome[agent].append(float(reward.components["outcome"]))
    assert min(outcome["expert"]) > 0.6
    assert sum(outcome["no_controls"]) < 0.3 * sum(outcome["expert"])


def test_a_cuvette_filled_below_its_window_is_no_water_reference() -> None:
    """A reference of 500 µL (the beam partly through air) earns no water-reference credit."""
    with Session("cuvette/1/tartrazine", secret="fill") as session:
        session.reset(0)
        lab: Lab = session.lab

        def transfer(source: str, destination: str, ul: float) -> None:
            moves = batch([(source, destination, ul)], "new", tip_rack="tips_1000ul", channels=[0])
            assert session.call_tool("lh_transfer", moves).ok

        assert session.call_tool(
            "spec_set_integration_time", {"time": {"value": 100, "unit": "millisecond"}}
        ).ok
        assert session.call_tool("spec_acquire_dark", {"scans": 1}).ok
        transfer("reservoir:A1", "cuvette", 500.0)
        assert session.call_tool("spec_acquire_reference", {"scans": 1}).ok
        transfer("reservoir:A10", "cuvette", 500.0)
        assert session.call_tool("spec_measure_absorbance", {"scans": 1}).ok
        episode = analyse(lab.journal.events())
    (m,) = measurements(episode, analyte("tartrazine").peak_nm)
    assert m.dark and m.reference == {"reservoir:A1": 500.0}
    rubric = task_class("cuvette/1/tartrazine").rubric
    assert rubric.score(episode)["process/blank"] == 0.5


def test_the_lot_is_what_the_standard_calibrates() -> None:
    """The expert's own in-range sample measurements converted with the library's ε over 1 cm
    miss by the lot (its content, N(1, 5 %²), and a food dye's batch); the expert's answer,
    calibrated against the standard of the same lot, does not (seeds 0-5 of level 2)."""
    library, calibrated = [], []
    for key in ("tartrazine", "nadh"):
        with Session(f"cuvette/2/{key}", secret=DEV_SECRET) as session:
            for seed in range(6):
                reward = run_episode(session, "expert", seed)
                truth = session.task.truth(session.lab)
                assert abs(truth["content"] - 1.0) <= 2.5 * 0.05
                a = analyte(key)
                sample = [
                    m
                    for m in measurements(analyse(session.lab.journal.events()), a.peak_nm)
                    if m.holds(SAMPLE) and not m.holds(STANDARD) and m.share(SAMPLE) > 0.05
                ]
                assert sample and all(m.peak is not None for m in sample)
                um = np.mean([m.peak / a.epsilon * 1e6 / m.share(SAMPLE) for m in sample])
                library.append(um / truth["analyte_um"] - 1.0)
                calibrated.append(reward.components["relative_error"])
    rms = {
        k: float(np.sqrt(np.mean(np.square(v))))
        for k, v in (("library", library), ("expert", calibrated))
    }
    assert rms["expert"] < 0.025 < rms["library"], rms
