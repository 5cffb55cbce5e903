"""The ``ph`` family: instances named and built from an indicator, a buffer set, a screen and
the sample's side; held-out parts only in ``test-ood``; the truth (the sample's pH, the
indicator's apparent pKa and lot) in the world and never in what the agent sees; refusals;
determinism; the calibration, not the library, earning the outcome."""

from __future__ import annotations

import json
import math

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import split_instances
from labtools.simulators.families.equilibrium_parts import (
    HELD_OUT_COMBINATIONS,
    HELD_OUT_INDICATORS,
    INDICATOR,
    INDICATORS,
    PURE_UNITS,
    indicator,
    screens_of,
)
from labtools.simulators.families.parts import HELD_OUT_SPECIES
from labtools.simulators.families.ph_parts import (
    DISTANCE,
    PH_BUFFER_SETS,
    SAMPLE_KEY,
    SCALE,
    SIDES,
    buffer_containers,
    fits,
)
from labtools.simulators.families.task import SAMPLE

FAMILY = "ph"
INSTANCE = "ph/3/phenol_red+ph4-10+base"
SCREENED = "ph/3/phenol_red+sunset_yellow+ph4-10+acid"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 672
    assert family.count() == 5 * len(structures)
    cls = task_class(SCREENED)
    assert cls.id == SCREENED and cls.level.number == 3
    assert (cls.indicator_key, cls.screen_key, cls.side) == ("phenol_red", "sunset_yellow", "acid")
    assert list(cls.buffer_ph.values()) == list(range(4, 11))
    assert task_class(SCREENED) is cls  # built once
    name = InstanceName.parse("ph/5/pyranine+ph3-9+acid")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "pyranine+ph3-9+acid")
    for bad in (
        "ph/6/phenol_red+ph4-10+base",  # no such level
        "ph/1/phenol_red+ph4-10",  # no side
        "ph/1/phenol_red+ph4-10+neutral",  # no such side
        "ph/1/bromophenol_blue+ph5-11+acid",  # no buffer holds its acid form
        "ph/1/phenol_red+tartrazine+ph4-10+acid",  # tartrazine does not screen phenol red
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_part_meets_its_criteria(family) -> None:
    for structure in family.structures():
        keys = structure.split("+")
        assert keys[0] in INDICATORS and keys[-1] in SIDES and fits(keys[0], keys[-2])
        if len(keys) == 4:
            assert keys[1] in screens_of(keys[0])
        # the buffers sit in A3-A9: the sample's column is free
        assert SAMPLE not in buffer_containers(keys[-2])
        phs = PH_BUFFER_SETS[keys[-2]]
        pka = indicator(keys[0]).pka
        assert min(phs) <= pka - PURE_UNITS and max(phs) >= pka + PURE_UNITS
    # harder levels put the sample further from the pKa, past the useful range's edge at 5
    lows = [DISTANCE[n][0] for n in range(1, 6)]
    assert lows == sorted(lows) and DISTANCE[1][1] < 1.0 < DISTANCE[5][1]


def test_the_out_of_distribution_split_holds_out_species_and_combinations(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert ood and not set(train) & set(ood) and len(train) + len(ood) == family.count()
    held = HELD_OUT_SPECIES | HELD_OUT_INDICATORS
    for name in train:
        assert not held & set(name.structure.split("+"))
    assert any("cresol_red" in i.structure for i in ood)
    for screen_kind, spacing in HELD_OUT_COMBINATIONS:
        assert screen_kind == "fluorophore" and spacing == "sparse"
        assert not any("fluorescein" in i.structure and "by2" in i.structure for i in train), (
            "a fluorophore screen with sparse buffers trained"
        )


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise = set(), set(), set()
    for level in (1, 5):
        with Session(f"ph/{level}/phenol_red+ph4-10+base", secret="wording") as session:
            statements.add(session.reset(0)["task"])
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}


def test_the_statement_names_the_parts_and_tells_no_truth() -> None:
    with Session(SCREENED, secret="leak") as session:
        text = session.reset(9)["task"]
        truth = session.task.truth(session.lab)
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
    for words in ("Phenol red", "Sunset Yellow", "acid form", "submit_ph", f"{SCALE}", SAMPLE):
        assert words.lower() in text.lower()
    assert "buffer pH 7.00 ±0.02" in text and "unknown pH" in deck
    assert "concentration not stated" in deck
    for key, value in truth.items():
        for figure in (f"{value:.3g}", f"{value:.4g}", f"{value:.2f}"):
            digits = len(figure.replace(".", "").lstrip("-0").rstrip("0"))
            assert digits < 3 or figure not in text + deck, (key, figure)


def test_the_truth_is_what_the_wells_run_on() -> None:
    with Session(SCREENED, secret="truth") as session:
        session.reset(2)
        world = session.lab.shared["world"]
        truth = session.task.truth(session.lab)
        library = world.species
        assert library[SAMPLE_KEY].ph == pytest.approx(truth["ph"])
        assert library["phenol_red"].pka == pytest.approx(truth["pka"])
        assert abs(truth["ph"] - truth["pka"]) <= DISTANCE[3][1] and truth["ph"] < truth["pka"]
        sample = world.peek(SAMPLE)
        assert sample.ph(library) == pytest.approx(truth["ph"])
        assert sample.concentration("sunset_yellow") == pytest.approx(truth["screen_um"] * 1e-6)
        stock = world.peek(INDICATOR)
        assert stock.concentration("phenol_red") == pytest.approx(truth["indicator_um"] * 1e-6)
        assert stock.ph(library) == 7.0  # the stock carries no buffer: the sample keeps its pH


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(SAMPLE).volume_ul
        for arguments in (
            {"ph": 15.0, "uncertainty": 0.1},
            {"ph": -1.0, "uncertainty": 0.1},
            {"ph": 7.0, "uncertainty": -0.1},
            {"ph": "seven", "uncertainty": 0.1},
            {"ph": 7.0},
            {"uncertainty": 0.1},
        ):
            result = session.call_tool("submit_ph", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(SAMPLE).volume_ul == before
        assert session.call_tool("submit_ph", {"ph": 7.0, "uncertainty": 0.1}).ok
        assert session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(SCREENED, secret="determinism") as session:
        first = evaluate(SCREENED, "expert", [7], k=1, session=session)
        again = evaluate(SCREENED, "expert", [7], k=1, session=session)
    with Session(SCREENED, secret="determinism") as session:
        fresh = evaluate(SCREENED, "expert", [7], k=1, session=session)
    assert first == again == fresh


def test_the_calibration_earns_the_outcome_and_the_library_does_not() -> None:
    """Seeds 0-5 of one instance: the expert's calibrated pH lands within 0.05 and its process
    is whole; the experiment without controls, read with the library's pKa and spectra, misses
    by the apparent pKa's offset and the lot's (its outcome, before the process, under half the
    expert's)."""
    expert, uncontrolled = [], []
    with Session(INSTANCE, secret=DEV_SECRET) as session:
        for seed in range(6):
            session.reset(seed)
            session.task.expert(session)
            reward = session.score()
            assert abs(reward.components["error"]) < 0.05
            assert reward.components["process"] == pytest.approx(1.0)
            expert.append(math.exp(-reward.components["crps"] / SCALE))
            session.reset(seed)
            session.task.no_controls(session)
            reward = session.score()
            uncontrolled.append(math.exp(-reward.components["crps"] / SCALE))
    assert sum(uncontrolled) / 6 < 0.5 * sum(expert) / 6
