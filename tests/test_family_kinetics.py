"""The ``kinetics`` family: instances named and built from an enzyme-substrate pair and a
coloured absorber; held-out parts only in ``test-ood``; the truth (Km, the lot's activity, the
product in the medium) in the world and never in what the agent sees; refusals; the expert's
controls earning its outcome."""

from __future__ import annotations

import json
import math

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import played, split_instances
from labtools.simulators.families.kinetics import BUFFER, ENZYME, STANDARD, SUBSTRATE
from labtools.simulators.families.kinetics_parts import (
    ABSORBER_MIN,
    HELD_OUT_COMBINATIONS,
    LEVEL,
    PAIRS,
    SUBSTRATE_MAX_UL,
    WELL_UL,
    absorbers,
    labels,
    overlap_at,
    pair,
)
from labtools.simulators.families.parts import HELD_OUT_SPECIES, analyte
from labtools.simulators.world import SpeciesLibrary
from labtools.simulators.world.kinetics import KineticsData

FAMILY = "kinetics"
COLOURED = "kinetics/3/beta_gal+sunset_yellow"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == 24
    assert family.count() == 5 * len(structures) == 120
    assert set(PAIRS) <= set(structures)
    cls = task_class(COLOURED)
    assert cls.id == COLOURED and cls.level is LEVEL[3]
    assert (cls.pair_key, cls.absorber_key) == ("beta_gal", "sunset_yellow")
    assert task_class(COLOURED) is cls  # built once
    name = InstanceName.parse("kinetics/5/alp")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "alp")
    for bad in (
        "kinetics/6/alp",  # no such level
        "kinetics/1/trypsin",  # no such pair
        "kinetics/1/alp+brilliant_blue",  # blue: nothing at 405 nm
        "kinetics/1/alp+p_nitroaniline",  # a product would be read as product
        "kinetics/1/alp+tartrazine+sunset_yellow",
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_every_part_meets_its_criteria(family) -> None:
    library, engine = SpeciesLibrary.default(), KineticsData.default()
    for key in PAIRS:
        p = pair(key)
        prior = engine.enzymes[p.enzyme]  # the world's engine runs the enzyme on its substrate
        assert (prior.substrate, prior.product) == (p.substrate, p.product)
        assert library[p.buffer].kind == "buffer" and library[p.enzyme].kind == "enzyme"
        substrate = library[p.substrate]  # colourless: next to nothing at the read wavelength
        assert not substrate.forms or float(substrate.absorptivity(p.read_nm)) < 10.0
        assert p.epsilon >= 1000.0  # the product reads where the assay reads it
        assert 0 < p.km[0] < p.km[1] and 0 < p.kcat[0] < p.kcat[1]
        for absorber in absorbers(key):
            assert analyte(absorber).kind in ("dye", "cofactor")
            assert overlap_at(absorber, p.read_nm) >= ABSORBER_MIN
    for structure in family.structures():
        keys = structure.split("+")
        assert keys[0] in PAIRS and all(k in absorbers(keys[0]) for k in keys[1:])


def test_the_labels_follow_the_level_and_the_literature_only() -> None:
    """The substrate reaches ``top`` × the published Km in a well; the enzyme stock weakens
    with the level; nothing a seed draws is on a label."""
    for key in PAIRS:
        p = pair(key)
        strengths = []
        for level in LEVEL.values():
            molar = labels(p, level)
            top = molar["substrate"] * SUBSTRATE_MAX_UL / WELL_UL
            assert top / p.km_centre == pytest.approx(level.top, rel=0.06)
            strengths.append(molar["enzyme"])
        assert strengths == sorted(strengths, reverse=True) and strengths[0] > 20 * strengths[-1]
    stocks = []
    for secret in ("one", "two"):
        with Session("kinetics/2/chymotrypsin", secret=secret) as session:
            session.reset(3)
            stocks.append(json.dumps(session.call_tool("lh_get_deck", {}).unwrap()["labels"]))
            truth = session.task.truth(session.lab)
    assert stocks[0] == stocks[1]
    assert str(round(truth["km_molar"] * 1e6, 1)) not in stocks[0]


def test_the_out_of_distribution_split_holds_out_species_and_a_combination(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert split_instances(family, "validation") == train == split_instances(family, "test-id")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()

    def parts(structure: str) -> set[str]:
        keys = structure.split("+")
        return {pair(keys[0]).product, *keys[1:]}

    combos = {tuple(i.structure.split("+")) for i in train}
    for name in train:
        assert not parts(name.structure) & HELD_OUT_SPECIES
    for name in ood:
        keys = tuple(name.structure.split("+"))
        assert parts(name.structure) & HELD_OUT_SPECIES or keys in HELD_OUT_COMBINATIONS
    # acetylcholinesterase's product (TNB) is held out: its pair only in test-ood
    assert all(not i.structure.startswith("ache") for i in train)
    # compositional: each part of a held-out combination trains, never the two together
    for combination in HELD_OUT_COMBINATIONS:
        assert combination not in combos
        assert (combination[0],) in combos and any(c[1:] == combination[1:] for c in combos)


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, noise, enzymes = set(), set(), set(), []
    for level in (1, 5):
        with Session(f"kinetics/{level}/alp+tartrazine", secret="wording") as session:
            statements.add(session.reset(0)["task"])
            budgets.add(json.dumps(session.task.budget.as_dict()))
            noise.add(session.lab.shared["reader_backend"].constants.od_noise_floor)
            enzymes.append(
                session.lab.shared["world"].peek(ENZYME).concentration("alkaline_phosphatase")
            )
    assert len(statements) == 1 and len(budgets) == 2 and noise == {0.001, 0.003}
    assert enzymes[0] > 20 * enzymes[1]  # level 5's enzyme near detection


def test_the_statement_names_the_assay_and_tells_no_truth() -> None:
    with Session(COLOURED, secret="leak") as session:
        observation = session.reset(9)
        text = observation["task"]
        truth = session.task.truth(session.lab)
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
    for words in ("beta-Galactosidase", "ONPG", "o-Nitrophenol", "420 nm", "Sunset Yellow"):
        assert words in text
    assert "per labelled active site" in text and "submit_kinetics" in text
    assert "coloured" in json.loads(deck)["labels"][ENZYME]
    for value in truth.values():
        for shown in (f"{value:.3g}", f"{value * 1e3:.3g}", f"{value * 1e6:.3g}"):
            digits = len(shown.split("e")[0].replace(".", "").lstrip("-0"))
            assert digits < 3 or shown not in text + deck, shown
    with Session("kinetics/3/beta_gal", secret="leak") as session:
        assert "coloured" not in session.reset(9)["task"]


def test_the_truth_is_what_the_wells_run_on() -> None:
    with Session(COLOURED, secret="truth") as session:
        session.reset(4)
        world = session.lab.shared["world"]
        truth = session.task.truth(session.lab)
        p = session.task.pair
        work = world.kinetics.at_work(p.enzyme)
        assert (truth["km_molar"], truth["kcat_per_s"]) == (work["km_molar"], work["kcat_per_s"])
        assert p.km[0] <= truth["km_reference"] <= p.km[1]
        assert p.kcat[0] <= truth["kcat_reference"] <= p.kcat[1]
        ratio = truth["kcat_per_s"] / truth["kcat_reference"]
        assert ratio != pytest.approx(1.0, abs=1e-6)  # the lot's activity and the day's
        # the product in the assay medium and the buffer's real pH are the world's own
        product = world.species[p.product]
        library = SpeciesLibrary.default()[p.product]
        assert product.pka == truth["product_pka"] != library.pka
        assert product.forms["base"].epsilon == pytest.approx(
            library.forms["base"].epsilon * truth["epsilon_factor"]
        )
        assert 0 < abs(world.species[p.buffer].ph - 7.0) < 0.1
        # the enzyme stock holds the absorber; its label no amount of it
        assert set(world.peek(ENZYME).amounts) == {p.enzyme, "sunset_yellow"}
        first = dict(truth)
        session.reset(4)
        assert session.task.truth(session.lab) == first  # same seed, same truth
        session.reset(5)
        assert session.task.truth(session.lab)["km_molar"] != first["km_molar"]


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    mm = {"value": 0.5, "unit": "millimolar"}
    per_s = {"value": 200.0, "unit": "1 / second"}
    with Session("kinetics/2/alp", secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek(SUBSTRATE).volume_ul
        for arguments in (
            {
                "km": {"value": 0.0, "unit": "millimolar"},
                "km_uncertainty": mm,
                "kcat": per_s,
                "kcat_uncertainty": per_s,
            },
            {
                "km": mm,
                "km_uncertainty": {"value": -1.0, "unit": "millimolar"},
                "kcat": per_s,
                "kcat_uncertainty": per_s,
            },
            {
                "km": mm,
                "km_uncertainty": mm,
                "kcat": {"value": 5.0, "unit": "millimolar"},
                "kcat_uncertainty": per_s,
            },
            {"km": mm, "km_uncertainty": mm, "kcat": per_s},
        ):
            result = session.call_tool("submit_kinetics", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek(SUBSTRATE).volume_ul == before
        ok = {"km": mm, "km_uncertainty": mm, "kcat": per_s, "kcat_uncertainty": per_s}
        assert session.call_tool("submit_kinetics", ok).ok and session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(COLOURED, secret="determinism") as session:
        first = evaluate(COLOURED, "expert", [7], k=1, session=session)
        again = evaluate(COLOURED, "expert", [7], k=1, session=session)
    with Session(COLOURED, secret="determinism") as session:
        fresh = evaluate(COLOURED, "expert", [7], k=1, session=session)
    assert first == again == fresh


def test_the_expert_runs_every_control_and_the_calibration_earns_its_outcome(family) -> None:
    """Seeds 0-11 of level 3's training structures: the expert runs every control (process 1)
    and its stated uncertainties cover its errors; the experiment without controls runs none,
    and its product, converted with the library's ε and the nominal path, errs more where the
    product's absorptivity depends on the assay's pH (β-galactosidase's o-nitrophenol)."""
    instances = [str(i) for i in split_instances(family, "train") if i.level == 3]
    z = []
    for seed in range(12):
        with Session(played(instances, seed), secret=DEV_SECRET) as session:
            expert = run_episode(session, "expert", seed)
            submitted = session.task.submission
            uncontrolled = run_episode(session, "no_controls", seed)
        assert expert.components["process"] == 1.0
        assert uncontrolled.components["process"] == 0.0
        for name in ("km", "kcat"):
            error = math.log(expert.components[f"{name}_ratio"])
            z.append(
                error
                / (
                    submitted[f"{name}_uncertainty"]
                    / submitted[f"{name}_molar" if name == "km" else f"{name}_per_s"]
                )
            )
    assert math.sqrt(sum(x * x for x in z) / len(z)) < 1.5
    errors = {"expert": [], "no_controls": []}
    for seed in range(8):
        with Session("kinetics/2/beta_gal", secret=DEV_SECRET) as session:
            for agent in errors:
                reward = run_episode(session, agent, seed)
                errors[agent].append(abs(math.log(reward.components["kcat_ratio"])))
    assert sum(errors["no_controls"]) > 2 * sum(errors["expert"])


def test_the_containers_the_rubric_names_are_the_statements() -> None:
    with Session("kinetics/1/alp", secret="rubric") as session:
        text = session.reset(0)["task"]
    for container in (BUFFER, SUBSTRATE, STANDARD, ENZYME):
        assert container in text
