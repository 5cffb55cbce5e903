"""The ``activity`` family: instances named and built from the ``kinetics`` family's pairs and
absorbers; held-out parts only in ``test-ood``; a statement that states the assay and tells no
truth; refusals; determinism; the truth as the rate the stock runs on at the stated substrate
level; the stock too active to read undiluted, and the product's absorptivity in the medium as
what the expert's standard curve finds and the uncontrolled experiment misses."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import played, split_instances
from labtools.simulators.families.activity import LEVEL, MEDIUM_SD, SCALE
from labtools.simulators.families.activity_expert import design, u_per_ml
from labtools.simulators.families.kinetics import SUBSTRATE
from labtools.simulators.families.kinetics_parts import (
    ENZYME_MAX_UL,
    PAIRS,
    SUBSTRATE_MAX_UL,
    WELL_UL,
    absorbers,
    labels,
    pair,
)
from labtools.simulators.families.parts import HELD_OUT_SPECIES
from labtools.simulators.world import SpeciesLibrary

FAMILY = "activity"
INSTANCE = "activity/3/chymotrypsin+sunset_yellow"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 24
    assert family.count() == 120
    assert set(PAIRS) <= set(structures)
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level is LEVEL[3]
    assert (cls.pair_key, cls.absorber_key) == ("chymotrypsin", "sunset_yellow")
    assert task_class(INSTANCE) is cls  # built once
    name = InstanceName.parse("activity/5/alp+tartrazine")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "alp+tartrazine")
    for bad in (
        "activity/6/alp",  # no such level
        "activity/1/trypsin",  # no such pair
        "activity/1/alp+brilliant_blue",  # does not absorb at 405 nm
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_part_meets_its_criteria(family) -> None:
    """Every structure is a pair, alone or with an absorber at its read wavelength; the levels
    raise the stock's activity, bring the stated substrate nearer Km, colour the preparation
    more, make the reader noisier and the wells fewer."""
    for structure in family.structures():
        key, *rest = structure.split("+")
        assert key in PAIRS and all(a in absorbers(key) for a in rest) and len(rest) <= 1
    levels = [LEVEL[n] for n in (1, 2, 3, 4, 5)]
    for a, b in itertools.pairwise(levels):
        assert b.activity > a.activity and b.top < a.top and b.noise >= a.noise
        assert b.absorber_od[0] > a.absorber_od[0] and b.budget.wells < a.budget.wells
    assert levels[-1].top > 1.0  # the stated level stays above the published Km...
    assert levels[-1].top < 2.0  # ...but far from saturating: the answer is not Vmax


def test_the_stock_is_too_active_to_read_undiluted_and_the_expert_dilutes() -> None:
    """The stock undiluted (the most a well holds of it) turns over 10 % of the stated
    substrate at the published constants within the naive's 10-minute read at every level and
    pair, within a minute from level 3 up; from level 2 up the expert's design dilutes it (in
    steps of 1 in 20 at most)."""
    for n, level in LEVEL.items():
        for key in PAIRS:
            p = pair(key)
            molar = labels(p, level)
            s = molar["substrate"] * SUBSTRATE_MAX_UL / WELL_UL
            v = p.kcat_centre * molar["enzyme"] * ENZYME_MAX_UL / WELL_UL * s / (p.km_centre + s)
            assert 0.1 * s / v < (600.0 if n < 3 else 60.0), (n, key)
            plan = design(p, molar, wells=level.budget.wells)
            assert all(1.0 < step <= 20.0 for step in plan.steps)
            assert n < 2 or plan.fold > 2.0


def test_the_out_of_distribution_split_holds_out_a_species_and_a_combination(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    held = {i.structure for i in ood}
    assert "beta_gal+tartrazine" in held and "ache" in held
    for name in train:
        key, *rest = name.structure.split("+")
        assert not HELD_OUT_SPECIES & {pair(key).product, *rest}
        assert name.structure != "beta_gal+tartrazine"


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise, enzymes = set(), set(), set(), []
    for level in (1, 5):
        with Session(f"activity/{level}/alp", secret="wording") as session:
            statements.add(session.reset(0)["task"])
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
            enzymes.append(
                session.lab.shared["world"]
                .peek("reservoir:A5")
                .concentration("alkaline_phosphatase")
            )
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}
    assert enzymes[1] > 20 * enzymes[0]


def test_the_statement_states_the_assay_and_tells_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        observation = session.reset(9)
        text = observation["task"]
        truth = session.task.truth(session.lab)
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
    for words in ("Chymotrypsin", "units per mL", "1 U = 1 µmol", "25 °C", "submit_activity"):
        assert words in text
    assert (
        "half its stock's labelled concentration" in text
        and "need not saturate" in text
        and f"exp(-CRPS / {SCALE})" in text
    )
    assert "initial rate" in text and "standard uncertainty" in text
    for value in truth.values():
        for shown in (f"{value:.3g}", f"{value * 1e-3:.3g}", f"{value * 1e3:.3g}"):
            digits = len(shown.split("e")[0].replace(".", "").lstrip("-0"))
            assert digits < 3 or shown not in text + deck, shown


def test_the_truth_is_the_stocks_rate_at_the_stated_substrate() -> None:
    """kcat × [E] × S/(Km + S) the wells run on, at the stated S, per mL of stock; the product
    in the medium off the library's by the lot's and the medium's factors."""
    with Session(INSTANCE, secret="truth") as session:
        session.reset(4)
        world = session.lab.shared["world"]
        task = session.task
        truth = task.truth(session.lab)
        p = task.pair
        work = world.kinetics.at_work(p.enzyme)
        s = task.substrate_molar
        enzyme = world.peek("reservoir:A5").concentration(p.enzyme)
        rate = work["kcat_per_s"] * enzyme * s / (work["km_molar"] + s)
        assert truth["activity_u_per_ml"] == pytest.approx(rate * 60e3, rel=1e-9)
        # a rate of 1 µM/min per µL of stock in a 200 µL well is 0.2 U/mL
        assert u_per_ml(1e-6 / 60.0) == pytest.approx(0.2)
        library = SpeciesLibrary.default()[p.product].absorptivity(p.read_nm, ph=p.ph)
        real = world.species[p.product].absorptivity(p.read_nm, ph=p.ph)
        factor = truth["epsilon_factor"] * truth["medium_factor"]
        assert float(real) == pytest.approx(float(library) * factor, rel=1e-9)
        assert abs(math.log(truth["medium_factor"])) < 5 * MEDIUM_SD
        first = dict(truth)
        session.reset(4)
        assert session.task.truth(session.lab) == first  # same seed, same truth
        session.reset(5)
        assert session.task.truth(session.lab)["activity_u_per_ml"] != first["activity_u_per_ml"]


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session("activity/2/alp", secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(SUBSTRATE).volume_ul
        for arguments in (
            {"activity": 0.0, "uncertainty": 1.0},
            {"activity": -3.0, "uncertainty": 1.0},
            {"activity": 5.0, "uncertainty": -1.0},
            {"activity": 5e12, "uncertainty": 1.0},
            {"activity": "five", "uncertainty": 1.0},
            {"activity": 5.0},
        ):
            result = session.call_tool("submit_activity", arguments)
            assert not result.ok and result.error is not None, arguments
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(SUBSTRATE).volume_ul == before
        ok = {"activity": 5.0, "uncertainty": 0.5}
        assert session.call_tool("submit_activity", ok).ok and session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [7], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    assert first == again == fresh


def test_the_expert_calibrates_and_the_uncontrolled_experiment_misses(family) -> None:
    """Seeds 0-7 of level 3's training structures: the expert runs every control (process 1)
    and is within 5 % on each; the experiment without controls runs none, and its errors (the
    library's ε, the nominal path) are larger and stated far too small."""
    instances = [str(i) for i in split_instances(family, "train") if i.level == 3]
    expert_err, bare_err = [], []
    for seed in range(8):
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            expert = run_episode(session, "expert", seed)
            bare = run_episode(session, "no_controls", seed)
        assert expert.components["process"] == 1.0
        assert bare.components["process"] == 0.0
        expert_err.append(abs(math.log(expert.components["ratio"])))
        bare_err.append(abs(math.log(bare.components["ratio"])))
    assert max(expert_err) < 0.05
    assert sum(bare_err) > 2 * sum(expert_err)
