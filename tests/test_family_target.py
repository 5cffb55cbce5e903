"""The ``target`` family: instances named and built from stocks and a target kind; held-out
parts only in ``test-ood``; the target stated as the lab's reader reads it, the recipe never; the
reward from the submitted well's real contents; refusals; determinism; the calibration, not only
the rubric, holding the package's numbers down."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from leaks import without_data

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import played, split_instances
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, alike
from labtools.simulators.families.target import TARGET_WELL, targets_of
from labtools.simulators.families.target_parts import (
    ALIKE_MAX,
    HELD_OUT_HUES,
    KINDS,
    LEVEL,
    STOCK_ANALYTES,
    hue,
    is_stock_analyte,
    target_nm,
)
from labtools.simulators.families.task import STANDARDS
from labtools.simulators.tasks.colour_matching import WAVELENGTHS_NM
from labtools.simulators.world import Mixture, SpeciesLibrary

FAMILY = "target"
PEAKS = "target/3/sunset_yellow+brilliant_blue+peaks"
SPECTRUM = "target/2/tartrazine+erythrosine+spectrum"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def _parts(structure: str) -> tuple[tuple[str, ...], str]:
    *keys, kind = structure.split("+")
    return tuple(keys), kind


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 272
    assert family.count() == 5 * 272
    cls = task_class(PEAKS)
    assert cls.id == PEAKS and cls.level.number == 3
    assert (cls.keys, cls.kind) == (("sunset_yellow", "brilliant_blue"), "peaks")
    assert task_class(PEAKS) is cls  # built once
    name = InstanceName.parse("target/5/carmoisine+spectrum")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "carmoisine+spectrum")
    for bad in (
        "target/6/carmoisine+spectrum",  # no such level
        "target/1/carmoisine+peaks",  # a peaks target needs two or three stocks
        "target/1/allura_red+ponceau_4r+spectrum",  # the same spectrum (alike 1.0)
        "target/1/nadh+spectrum",  # its lots are the library's entry: no lot spread
        "target/1/brilliant_blue+sunset_yellow+peaks",  # not in ANALYTES order
        "target/1/tartrazine+sunset_yellow+erythrosine+patent_blue_v+spectrum",  # four
        "target/1/tartrazine",  # no target kind
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_part_meets_its_criteria(family) -> None:
    library = SpeciesLibrary.default()
    assert tuple(k for k in ANALYTES if is_stock_analyte(k)) == STOCK_ANALYTES
    assert all(library[k].batch is not None for k in STOCK_ANALYTES)
    kinds = set()
    for structure in family.structures():
        keys, kind = _parts(structure)
        kinds.add((len(keys), kind))
        assert len(keys) in KINDS[kind] and list(keys) == sorted(keys, key=ANALYTES.index)
        assert all(alike(a, b) <= ALIKE_MAX for a, b in itertools.combinations(keys, 2))
        nm = target_nm(keys, kind)
        if kind == "peaks":  # one wavelength per stock, on the spectra's 10 nm grid
            assert len(set(nm)) == len(keys) and all(w % 10 == 0 for w in nm)
        else:
            assert np.array_equal(nm, WAVELENGTHS_NM)
    assert kinds == {(1, "spectrum"), (2, "spectrum"), (3, "spectrum"), (2, "peaks"), (3, "peaks")}
    # consecutive structures span the sizes and kinds (a level's seeds step through them)
    assert {_parts(s)[1] for s in family.structures()[:4]} == {"peaks", "spectrum"}


def test_the_out_of_distribution_split_holds_out_a_species_and_a_pair_of_hues(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert split_instances(family, "validation") == train == split_instances(family, "test-id")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    assert ood, "some structures are held out"
    hues = []
    for name in train:
        keys, _ = _parts(name.structure)
        assert not set(keys) & HELD_OUT_SPECIES
        hues.append({hue(k) for k in keys})
    for name in ood:
        keys, _ = _parts(name.structure)
        assert set(keys) & HELD_OUT_SPECIES or {hue(k) for k in keys} >= HELD_OUT_HUES
    # compositional: each held-out hue trains, never the two together
    assert not any(h >= HELD_OUT_HUES for h in hues)
    assert all(any(colour in h for h in hues) for colour in HELD_OUT_HUES)


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise, spread = set(), set(), set(), []
    for level in (1, 5):
        with Session(f"target/{level}/sunset_yellow+brilliant_blue+peaks", secret="w") as session:
            statements.add(without_data(session.reset(0)["task"]))
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
            profile = session.lab.shared["world"].profile
            spread.append(profile["species.sunset_yellow.lot.epsilon_factor"].prior.b)
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}
    assert spread == pytest.approx([0.03 * LEVEL[1].lot_factor, 0.03 * LEVEL[5].lot_factor])


def test_the_statement_gives_the_target_and_never_the_recipe() -> None:
    for instance in (PEAKS, SPECTRUM):
        with Session(instance, secret="leak") as session:
            statement = session.reset(9)["task"]
            task, lab = session.task, session.lab
            nm, od = targets_of(statement)
            assert np.array_equal(nm, task.nm) and np.allclose(od, task._target, atol=1e-5)
            labels = lab.shared["world"].labels
            for container in task.stocks.values():
                assert f"{container}: '{labels[container]}'" in statement
            assert "submit_target" in statement and f"tau = {task.level.tolerance:g}" in statement
            deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
            shown = statement + deck
            hidden = list(task.truth(lab).values())
            hidden += [
                lab.shared["world"].peek(c).concentration(k) * 1e6 for k, c in task.stocks.items()
            ]
            for value in hidden:
                for text in (f"{value:.4g}", f"{value:.5g}"):
                    assert text not in shown, text
            assert "sample" not in deck  # no unknown sample: the standards, water and waste


def test_the_target_is_the_recipe_as_this_reader_reads_it(family) -> None:
    """A well holding the recipe (at any volume: the solution is judged as 200 µL of it) scores
    1; the target is not the library's: the lots and the reader's gain move it."""
    with Session(SPECTRUM, secret="reach") as session:
        session.reset(3)
        task, lab = session.task, session.lab
        world = lab.shared["world"]
        recipe = task.truth(lab)
        exact = task._recipe_mix(lab, recipe)
        world.fill("plate_2:H12", Mixture.solution(240.0, exact.concentrations()))
        assert session.call_tool("submit_target", {"well": "plate_2:H12"}).ok
        score = task.score(lab)
        assert score["raw"] == pytest.approx(1.0) and score["relative_error"] < 1e-9
        gain = 1.0 + lab.shared["reader_backend"].truth.gain_error
        assert task._target == pytest.approx(task._read(lab, exact, task.nm))
        assert gain != 1.0 and TARGET_WELL.startswith("plate_1:")
        lots = [world.hidden_truth()[f"batch/{k}"][0] for k in task.keys]
        assert all(abs(f - 1.0) > 1e-6 for f in lots)


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session(PEAKS, secret="refusal") as session:
        session.reset(0)
        before = {c: session.lab.shared["world"].peek(c).volume_ul for c in STANDARDS[:2]}
        for well in ("plate_3:A1", "plate_1:I1", "plate_1:A13", "reservoir:A2", "plate_1:A1\n", 7):
            result = session.call_tool("submit_target", {"well": well})
            assert not result.ok and result.error is not None and result.error["field"]
        assert not session.call_tool("submit_target", {}).ok
        assert session.task.submission is None and not session.done
        after = {c: session.lab.shared["world"].peek(c).volume_ul for c in STANDARDS[:2]}
        assert after == before
        # an empty well is taken, and scores nothing: no solution, no valid volume
        assert session.call_tool("submit_target", {"well": "plate_2:A1"}).ok
        reward = session.score()
        assert reward.raw == 0.0 and reward.validity == 0.0


@pytest.mark.parametrize("level", [1, 3, 5])
def test_the_calibration_earns_the_outcome_not_only_the_rubric(family, level: int) -> None:
    """Seeds 0-7 over the level's training structures: the expert runs every control; the
    package's numbers (the library's ε, the labels, the nominal path) miss the target by the
    lots and the gain: their outcome, before the rubric, is under half the expert's."""
    instances = [str(i) for i in split_instances(family, "train") if i.level == level]
    outcome = {"expert": 0.0, "no_controls": 0.0}
    for seed in range(8):
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            expert = run_episode(session, "expert", seed)
            assert expert.components["process"] == 1.0
            outcome["expert"] += expert.components["outcome"]
            bare = run_episode(session, "no_controls", seed)
            assert bare.components["process/blank"] == 0.0
            outcome["no_controls"] += bare.components["outcome"]
    assert outcome["no_controls"] < 0.5 * outcome["expert"], outcome


def test_same_seed_same_calls_same_reward() -> None:
    instance = "target/4/sunset_yellow+erythrosine+ponceau_4r+spectrum"
    with Session(instance, secret="determinism") as session:
        first = evaluate(instance, "expert", [4], k=1, session=session)
        again = evaluate(instance, "expert", [4], k=1, session=session)
    with Session(instance, secret="determinism") as session:
        fresh = evaluate(instance, "expert", [4], k=1, session=session)
    assert first == again == fresh
    with Session(instance, secret="determinism") as session:
        other = evaluate(instance, "expert", [5], k=1, session=session)
    assert other.mean_raw != first.mean_raw


def test_the_target_kinds_read_as_stated() -> None:
    with Session(PEAKS, secret="kinds") as session:
        nm, _ = targets_of(session.reset(1)["task"])
    assert list(nm) == [480.0, 630.0]  # sunset yellow's and brilliant blue's bands
    with Session(SPECTRUM, secret="kinds") as session:
        statement = session.reset(1)["task"]
    nm, od = targets_of(statement)
    assert list(nm) == list(WAVELENGTHS_NM) and od.max() <= 1.8 + 1e-9
    assert re.search(r"keep 150-250 µL", statement)
