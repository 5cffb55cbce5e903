"""Task families: instances named and built from parts, split in and out of distribution, each
level graded, the shortcuts held down, the test splits' secrets never in the package."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from labtools.session import Session
from labtools.session.evaluate import (
    CALIBRATION_SECRET,
    DEV_SECRET,
    TABLE_AGENTS,
    evaluate,
    implements,
    run_episode,
)
from labtools.session.family import InstanceName, UnknownInstance
from labtools.session.registry import (
    UnknownTask,
    family_ids,
    load_family,
    task_class,
    task_ids,
)
from labtools.session.splits import (
    SPLITS,
    TEST_SECRET_ENV,
    MissingSecret,
    played,
    split_instances,
    split_secret,
)
from labtools.simulators.families.parts import HELD_OUT_PAIRS, HELD_OUT_SPECIES, analyte

FAMILY = "quantify"
#: evaluation seeds per level (under the dev secret), cycling over the level's structures
SEEDS = range(12)


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) and family.count() == 5 * len(structures)
    cls = task_class("quantify/3/tartrazine+sunset_yellow")
    assert cls.id == "quantify/3/tartrazine+sunset_yellow" and cls.level.number == 3
    assert (cls.analyte_key, cls.interferent_key) == ("tartrazine", "sunset_yellow")
    assert task_class("quantify/3/tartrazine+sunset_yellow") is cls  # built once
    name = InstanceName.parse("quantify/5/nadh")
    assert (name.family, name.level, name.structure) == ("quantify", 5, "nadh")
    for bad in ("quantify/6/nadh", "quantify/1/nadh+nadh", "quantify/x/nadh", "nowhere/1/nadh"):
        with pytest.raises(UnknownTask):
            task_class(bad)
    with pytest.raises(UnknownInstance):
        InstanceName.parse("quantify/nadh")


def test_a_level_changes_the_physics_and_the_budget_not_the_wording(family) -> None:
    statements, budgets, noise = set(), set(), set()
    for level in (1, 5):
        with Session(f"quantify/{level}/brilliant_blue", secret="wording") as session:
            statements.add(session.reset(0)["task"].replace("\u00b1", "+-"))
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}


def test_the_out_of_distribution_split_holds_out_species_and_pairs_of_classes(family) -> None:
    """quantify's structures (the mixture's, below)."""
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert split_instances(family, "validation") == train == split_instances(family, "test-id")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    seen = {k for i in train for k in i.structure.split("+")}
    assert not seen & HELD_OUT_SPECIES
    assert all(
        HELD_OUT_SPECIES & set(i.structure.split("+"))
        or frozenset(analyte(k).kind for k in i.structure.split("+")) in HELD_OUT_PAIRS
        for i in ood
    )
    # compositional: each class of a held-out pair appears in training, never together
    classes = [frozenset(analyte(k).kind for k in i.structure.split("+")) for i in train]
    for pair in HELD_OUT_PAIRS:
        assert pair not in classes and all(any(c & {k} for c in classes) for k in pair)


def test_a_test_split_needs_the_evaluators_secret_and_refuses_a_public_one(
    tmp_path: Path,
) -> None:
    assert split_secret("validation") == DEV_SECRET
    assert split_secret("train") != split_secret("train")  # fresh for every run
    for split in ("test-id", "test-ood"):
        with pytest.raises(MissingSecret, match=TEST_SECRET_ENV):
            split_secret(split, environ={})
        for public in (DEV_SECRET, CALIBRATION_SECRET, "short"):
            with pytest.raises(MissingSecret, match="public or short"):
                split_secret(split, environ={TEST_SECRET_ENV: public})
    own = "an evaluator's own secret, 2026"
    assert split_secret("test-ood", environ={TEST_SECRET_ENV: own}) == own
    (tmp_path / "secret").write_text(own + "\n", "utf-8")
    assert split_secret("test-id", secret_file=tmp_path / "secret", environ={}) == own
    with pytest.raises(ValueError, match="unknown split"):
        split_secret("test", environ={})
    assert SPLITS == ("train", "validation", "test-id", "test-ood")


def test_the_command_line_refuses_a_test_split_without_a_secret(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "labtools", "eval", "--family", FAMILY, "--split", "test-ood"]
    env = {k: v for k, v in __import__("os").environ.items() if k != TEST_SECRET_ENV}
    refused = subprocess.run(
        [*base, "--seeds", "1"], capture_output=True, text=True, env=env, timeout=300
    )
    assert refused.returncode == 2 and TEST_SECRET_ENV in refused.stderr
    assert refused.stdout == ""
    secret = tmp_path / "secret"
    secret.write_text("an evaluator's own secret, 2026", "utf-8")
    ran = subprocess.run(
        [*base, "--seeds", "2", "--level", "1", "--agent", "naive", "--secret-file", str(secret)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("quantify/1") and "naive" in ran.stdout


def test_the_list_counts_the_families_instances() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "labtools", "eval", "--list"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("quantify/"))
    assert f"{load_family(FAMILY).count()} instances" in line
    line = next(x for x in listed.stdout.splitlines() if x.startswith("standard_curve "))
    assert line.endswith("(a member of quantify)")


def test_every_task_is_a_member_of_one_family() -> None:
    member_of: dict[str, list[str]] = {}
    for family in map(load_family, family_ids()):
        for task in family.members:
            member_of.setdefault(task, []).append(family.id)
    assert {task: families for task, families in member_of.items() if len(families) > 1} == {}
    assert sorted(member_of) == task_ids()


@pytest.mark.parametrize("name", family_ids())
@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_every_level_grades_its_agents(name: str, level: int) -> None:
    """Every family, under the dev secret, seeds 0-11 spread over the level's training
    structures (as ``labtools eval`` spreads them):
    the expert ≥ 0.9 normalised, the experiment without controls ≤ 0.5, the naive, random and
    shortcut agents ≤ 0.2 (and, where the agent states its hypothesis, a trivial claim and a
    wrong verdict), the expert's raw scores graded (not all alike) and the naive's never all
    perfect. (The naive protocol scores 0 on every one of these seeds at some hard levels:
    quantify/5's raw mean is 0.006 over seeds 0-39.)"""
    family = load_family(name)
    instances = [str(i) for i in split_instances(family, "train") if i.level == level]
    normalized: dict[str, list[float]] = {}
    raw: dict[str, list[float]] = {}
    for seed in SEEDS:
        instance = played(instances, seed)
        with Session(instance, secret=DEV_SECRET) as session:
            for agent in TABLE_AGENTS:
                if implements(session.task, agent):
                    reward = run_episode(session, agent, seed)
                    normalized.setdefault(agent, []).append(reward.normalized * reward.validity)
                    raw.setdefault(agent, []).append(reward.raw)
    mean = {agent: sum(r) / len(r) for agent, r in normalized.items()}
    assert mean["expert"] >= 0.9, mean
    assert mean["no_controls"] <= 0.5, mean
    shortcuts = set(mean) - {"expert", "no_controls"}
    assert shortcuts >= {"naive", "random", "prior", "inversion"}, sorted(mean)
    assert name != "hypothesis" or shortcuts >= {"trivial", "wrong_verdict"}
    for shortcut in shortcuts:
        assert mean[shortcut] <= 0.2, mean
    assert len({round(r, 6) for r in raw["expert"]}) > 1, raw["expert"]
    assert min(raw["naive"]) < 1.0, raw["naive"]  # the naive protocol is never perfect


def test_same_seed_same_calls_same_reward() -> None:
    instance = "quantify/3/sunset_yellow+tartrazine"
    with Session(instance, secret="determinism") as session:
        first = evaluate(instance, "expert", [4], k=1, session=session)
        again = evaluate(instance, "expert", [4], k=1, session=session)
    with Session(instance, secret="determinism") as session:
        fresh = evaluate(instance, "expert", [4], k=1, session=session)
    assert first == again == fresh


def test_the_statement_and_the_deck_tell_no_hidden_truth() -> None:
    with Session("quantify/2/brilliant_blue+allura_red", secret="leak") as session:
        observation = session.reset(9)
        truth = session.task.truth(session.lab)
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
        shown = observation["task"] + deck
        for value in truth.values():
            for text in (f"{value:.3g}", f"{value:.4g}", f"{value * 1e-6:.3e}"):
                assert text not in shown
        assert "sample" in deck and "standard" in deck


def test_a_mixtures_candidates_are_told_apart_and_its_held_out_sets_named() -> None:
    from labtools.simulators.families.mixture import ALIKE_MAX, CANDIDATES
    from labtools.simulators.families.parts import alike

    family = load_family("mixture")
    structures = family.structures()
    assert len(structures) == len(set(structures)) and family.count() > 100_000
    assert {len(s.split("+")) for s in structures} == set(CANDIDATES)
    for structure in structures[::997]:
        keys = structure.split("+")
        assert all(alike(a, b) <= ALIKE_MAX for i, a in enumerate(keys) for b in keys[i + 1 :])
        kinds = {analyte(k).kind for k in keys}
        expected = bool(HELD_OUT_SPECIES & set(keys)) or any(p <= kinds for p in HELD_OUT_PAIRS)
        assert family.held_out(structure) == expected


def test_a_mixture_refuses_a_submission_without_every_candidate() -> None:
    instance = "mixture/2/tartrazine+brilliant_blue+methylene_blue"
    with Session(instance, secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek("reservoir:A10").volume_ul
        micromolar = {"value": 1.0, "unit": "micromolar"}
        for concentrations in (
            {"tartrazine": micromolar, "brilliant_blue": micromolar},  # one missing
            {k: micromolar for k in ("tartrazine", "brilliant_blue", "methylene_blue", "x")},
            {"tartrazine": micromolar, "brilliant_blue": micromolar, "methylene_blue": "1 µM"},
        ):
            result = session.call_tool("submit_mixture", {"concentrations": concentrations})
            assert not result.ok and result.error is not None and result.error["field"]
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek("reservoir:A10").volume_ul == before
