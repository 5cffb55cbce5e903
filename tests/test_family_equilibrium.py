"""The ``equilibrium`` family: instances named and built from an indicator, a screen and a
buffer set; held-out parts only in ``test-ood``; the truth (the apparent pKa, the buffers' real
pH) in the world and never in the statement; each level grading its agents."""

from __future__ import annotations

import json
import math

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.reward import pass_hat_k
from labtools.session.splits import played, split_instances
from labtools.simulators.families.equilibrium_parts import (
    BUFFER_SETS,
    HELD_OUT_COMBINATIONS,
    HELD_OUT_INDICATORS,
    INDICATOR,
    INDICATORS,
    PKA_SPREAD,
    PKA_TRUNCATE,
    PURE_UNITS,
    buffers_fit,
    indicator,
    indicators,
    overlapped_form,
    screens_of,
    spacing,
)
from labtools.simulators.families.parts import HELD_OUT_SPECIES, analyte
from labtools.simulators.families.quantify import ALIKE_MAX, OVERLAP_MIN
from labtools.simulators.world import SpeciesLibrary

FAMILY = "equilibrium"
#: evaluation seeds per level (under the dev secret); seed s plays the level's s-th training
#: structure, as ``labtools eval --family`` does (the order spans the indicators)
SEEDS = range(16)
SCREENED = "equilibrium/3/phenol_red+sunset_yellow+ph3-10"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def _parts(structure: str) -> tuple[str, str | None, str]:
    keys = structure.split("+")
    return keys[0], keys[1] if len(keys) == 3 else None, keys[-1]


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 336
    assert family.count() == 5 * len(structures)
    assert indicators() == INDICATORS  # the criteria admit exactly the listed indicators
    cls = task_class(SCREENED)
    assert cls.id == SCREENED and cls.level.number == 3
    assert (cls.indicator_key, cls.screen_key) == ("phenol_red", "sunset_yellow")
    assert list(cls.buffer_ph.values()) == list(BUFFER_SETS["ph3-10"])
    assert task_class(SCREENED) is cls  # built once
    name = InstanceName.parse("equilibrium/5/bromophenol_blue+ph2-9")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "bromophenol_blue+ph2-9")
    for bad in (
        "equilibrium/6/bromophenol_blue+ph2-9",  # no such level
        "equilibrium/1/bromophenol_blue+ph4-11",  # no buffer keeps its acid form pure
        "equilibrium/1/phenolphthalein+ph4-11",  # its acid form does not absorb
        "equilibrium/1/o_nitrophenol+ph3-10",  # too weak in the reader's band
        "equilibrium/1/phenol_red+nadh+ph3-10",  # NADH does not absorb under its forms
        "equilibrium/1/bromophenol_blue",  # no buffers
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_part_meets_its_criteria(family) -> None:
    library = SpeciesLibrary.default()
    for structure in family.structures():
        key, screen, buffers = _parts(structure)
        assert library[key].kind == "indicator" and buffers_fit(key, buffers)
        # a buffer keeps each form pure whatever the drawn shift
        pka, phs = indicator(key).pka, BUFFER_SETS[buffers]
        extreme = PKA_TRUNCATE * PKA_SPREAD
        assert min(phs) <= pka - extreme - PURE_UNITS and max(phs) >= pka + extreme + PURE_UNITS
        if screen is not None:
            assert screen in screens_of(key)
            assert overlapped_form(key, screen)[1] >= OVERLAP_MIN
    # the screens are told apart from the forms they overlap
    assert all(
        alike <= ALIKE_MAX
        for key in INDICATORS
        for screen in screens_of(key)
        for alike in _alike_forms(key, screen)
    )


def _alike_forms(key: str, screen: str) -> list[float]:
    import numpy as np

    library = SpeciesLibrary.default()
    grid = np.arange(330.0, 751.0, 2.0)
    b = library[screen].absorptivity(grid)
    out = []
    for form in ("acid", "base"):
        a = library[key].forms[form].absorptivity(grid)
        out.append(float(a @ b / math.sqrt(float(a @ a) * float(b @ b))))
    return out


def test_the_out_of_distribution_split_holds_out_species_and_a_combination(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert split_instances(family, "validation") == train == split_instances(family, "test-id")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    held = HELD_OUT_SPECIES | HELD_OUT_INDICATORS
    combos = []
    for name in train:
        key, screen, buffers = _parts(name.structure)
        assert not {key, screen} & held
        combos.append((analyte(screen).kind if screen else None, spacing(buffers)))
    for name in ood:
        key, screen, buffers = _parts(name.structure)
        combination = (analyte(screen).kind if screen else None, spacing(buffers))
        assert {key, screen} & held or combination in HELD_OUT_COMBINATIONS
    # compositional: each part of a held-out combination trains, never the two together
    for kind, spaced in HELD_OUT_COMBINATIONS:
        assert (kind, spaced) not in combos
        assert any(c[0] == kind for c in combos) and any(c[1] == spaced for c in combos)
    # every level offers training structures of every training indicator
    for level in family.levels:
        mine = {_parts(i.structure)[0] for i in train if i.level == level}
        assert mine == set(INDICATORS) - HELD_OUT_INDICATORS


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise, stocks = set(), set(), set(), []
    for level in (1, 5):
        with Session(f"equilibrium/{level}/bromothymol_blue+ph3-10", secret="wording") as session:
            statements.add(session.reset(0)["task"])
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
            stocks.append(session.task.truth(session.lab)["indicator_um"])
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}
    assert stocks[0] > 5 * stocks[1]  # level 5's stock is far weaker


def test_the_truth_is_in_the_world_and_not_in_what_the_agent_sees() -> None:
    with Session(SCREENED, secret="leak") as session:
        observation = session.reset(9)
        truth = session.task.truth(session.lab)
        world = session.lab.shared["world"]
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
        library = SpeciesLibrary.default()
        # the reader reads the apparent pKa and the buffers' real pH
        assert world.species["phenol_red"].pka == truth["pka"] != library["phenol_red"].pka
        assert abs(truth["pka"] - library["phenol_red"].pka) <= PKA_TRUNCATE * PKA_SPREAD
        real = [world.species[f"buffer_ph{p}"].ph for p in BUFFER_SETS["ph3-10"]]
        offsets = [r - p for r, p in zip(real, BUFFER_SETS["ph3-10"], strict=True)]
        assert all(0 < abs(d) < 0.1 for d in offsets)
        # the stock holds the indicator and its screen, its label neither amount
        stock = world.peek(INDICATOR)
        assert set(stock.amounts) == {"phenol_red", "sunset_yellow"}
        shown = observation["task"] + deck
        assert "screened with" in world.labels[INDICATOR] and "µM" not in world.labels[INDICATOR]
        for value in (*truth.values(), *real):
            for text in (f"{value:.4g}", f"{value:.5g}", f"{value * 1e-6:.3e}"):
                digits = len(text.split("e")[0].replace(".", "").lstrip("-0"))
                assert digits < 4 or text not in shown, text
        assert "buffer pH 7.00 ±0.02" in shown


def test_a_submission_out_of_range_is_refused_and_the_episode_goes_on() -> None:
    with Session(SCREENED, secret="refusal") as session:
        session.reset(0)
        for arguments in (
            {"pka": 20.0, "uncertainty": 0.1},
            {"pka": 7.0, "uncertainty": -1.0},
            {"pka": 7.0},
        ):
            result = session.call_tool("submit_equilibrium", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.call_tool("submit_equilibrium", {"pka": 7.5, "uncertainty": 0.1}).ok


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_the_expert_passes_and_runs_every_control(family, level: int) -> None:
    """Beyond every family's grading (tests/test_families.py), seeds 0-15 over the level's
    training structures: the expert's pass^3 ≥ 0.8 with every control run, and the experiment
    without controls runs no blank and no replicate."""
    instances = [str(i) for i in split_instances(family, "train") if i.level == level]
    passed = 0
    for seed in SEEDS:
        instance = played(instances, seed)
        with Session(instance, secret=DEV_SECRET) as session:
            expert = run_episode(session, "expert", seed)
            passed += expert.success
            assert expert.components["process"] == 1.0  # every control
            bare = run_episode(session, "no_controls", seed)
            assert bare.components.get("process/blank", 0.0) == 0.0
            assert bare.components.get("process/replicates", 0.0) == 0.0
    assert pass_hat_k(passed, len(SEEDS), 3) >= 0.8, passed


def test_same_seed_same_calls_same_reward() -> None:
    instance = "equilibrium/4/bromothymol_blue+sunset_yellow+ph2-10by2"
    with Session(instance, secret="determinism") as session:
        first = evaluate(instance, "expert", [4], k=1, session=session)
        again = evaluate(instance, "expert", [4], k=1, session=session)
    with Session(instance, secret="determinism") as session:
        fresh = evaluate(instance, "expert", [4], k=1, session=session)
    assert first == again == fresh
    with Session(instance, secret="determinism") as session:
        other = evaluate(instance, "expert", [5], k=1, session=session)
    assert other.mean_raw != first.mean_raw
