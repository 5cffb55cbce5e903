"""The ``luminescence`` family: instances named and built from the samples' count, the control's
place and the samples' decades; the held-out combination only in ``test-ood``; the layout's
neighbours; the truth (each sample's ATP, the lot's yield and the reader's efficiency) in the
world and never in what the agent sees; refusals; determinism; the leak and the lot are what
the expert's controls earn."""

from __future__ import annotations

import itertools
import json
import math
import statistics

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate, run_episode
from labtools.session.family import InstanceName
from labtools.session.registry import UnknownTask, family_ids, load_family, task_class
from labtools.session.splits import split_instances
from labtools.simulators.families import luminescence_expert
from labtools.simulators.families.estimates import submission
from labtools.simulators.families.luminescence import STANDARD, nm_of
from labtools.simulators.families.luminescence_parts import (
    COUNTS,
    DECADES,
    HOT_WELL,
    LEVEL,
    NOMINAL_CPS_PER_PMOL,
    SPECIES,
    held_out,
    neighbours,
    sample_wells,
)
from labtools.simulators.plate_reading.params import ReaderConstants
from labtools.simulators.published import published
from labtools.simulators.world import SpeciesLibrary

FAMILY = "luminescence"
INSTANCE = "luminescence/3/n4+edge+dec2"


@pytest.fixture(scope="module")
def family():
    return load_family(FAMILY)


def test_instances_are_named_and_built_from_their_parts(family) -> None:
    assert FAMILY in family_ids()
    structures = family.structures()
    assert len(structures) == len(set(structures)) == len(COUNTS) * len(HOT_WELL) * len(DECADES)
    assert family.count() == 5 * len(structures) == 180
    cls = task_class(INSTANCE)
    assert cls.id == INSTANCE and cls.level is LEVEL[3]
    assert (cls.parts.samples, cls.parts.hot, cls.parts.decades) == (4, "edge", 2)
    assert task_class(INSTANCE) is cls  # built once
    name = InstanceName.parse("luminescence/5/n6+none+dec3")
    assert (name.family, name.level, name.structure) == (FAMILY, 5, "n6+none+dec3")
    for bad in (
        "luminescence/6/n4+edge+dec2",  # no such level
        "luminescence/1/n7+edge+dec2",  # seven samples
        "luminescence/1/n4+above+dec2",  # no such place
        "luminescence/1/n4+edge+dec4",  # four decades
        "luminescence/1/edge+n4+dec2",  # parts out of order
    ):
        with pytest.raises(UnknownTask):
            task_class(bad)


def test_the_layout_puts_the_control_where_the_structure_says() -> None:
    wells = sample_wells(max(COUNTS))
    for a, b in itertools.combinations(wells, 2):  # no sample is another's neighbour
        edges, corners = neighbours(a)
        assert b not in edges + corners
    for place, hot in HOT_WELL.items():
        edges, corners = neighbours(hot)
        touched_edge = [w for w in wells if w in edges]
        touched_corner = [w for w in wells if w in corners]
        expected = {"edge": (["C2"], []), "diagonal": ([], ["C2"]), "none": ([], [])}[place]
        assert (touched_edge, touched_corner) == expected, place
    # the expert's own wells touch neither a sample nor the control
    own = [w for pair in luminescence_expert.STANDARD_WELLS for w in pair]
    own += list(luminescence_expert.BLANKS)
    for w in own:
        edges, corners = neighbours(w)
        assert not set(edges + corners + [w]) & (set(wells) | set(HOT_WELL.values()))
    assert neighbours("A1") == (["B1", "A2"], ["B2"])


def test_every_part_meets_its_criteria() -> None:
    # the package's nominal yield is the library's photons times the published efficiency
    photons = SpeciesLibrary.default()[SPECIES].luminescence
    assert photons is not None
    efficiency = ReaderConstants().photon_detection_efficiency
    assert photons["photons_per_s_per_pmol"] * efficiency == pytest.approx(NOMINAL_CPS_PER_PMOL)
    crosstalk = published()["reader.luminescence.crosstalk"].prior
    dark = published()["reader.luminescence.dark_rate"].prior
    assert crosstalk is not None and dark is not None
    levels = [LEVEL[n] for n in range(1, 6)]
    for easier, harder in itertools.pairwise(levels):
        assert harder.floor_cps < easier.floor_cps  # fainter samples
        assert harder.hot_cps[0] >= easier.hot_cps[0]  # a brighter control
        assert harder.dark >= easier.dark  # a higher dark rate
        assert harder.budget.calls < easier.budget.calls
        assert harder.budget.wells < easier.budget.wells
    # level 1: the faintest sample well above the dark rate, the worst leak a tenth of it;
    # level 5: near the dark floor, the leak at the published median already larger
    one, five = LEVEL[1], LEVEL[5]
    assert one.floor_cps >= 30 * dark.b and one.hot_cps[1] * crosstalk.b <= 0.1 * one.floor_cps
    assert five.floor_cps <= dark.a * five.dark
    assert five.hot_cps[0] * math.sqrt(crosstalk.a * crosstalk.b) > five.floor_cps


def test_the_out_of_distribution_split_holds_out_a_combination(family) -> None:
    train = split_instances(family, "train")
    ood = split_instances(family, "test-ood")
    assert not set(train) & set(ood) and len(train) + len(ood) == family.count()
    assert ood and all(held_out(i.structure) for i in ood)
    trained = {tuple(i.structure.split("+")[1:]) for i in train}
    assert ("diagonal", "dec3") not in trained
    assert any(h == "diagonal" for h, _ in trained) and any(d == "dec3" for _, d in trained)


def test_a_level_changes_the_physics_and_the_budget_not_the_wording() -> None:
    statements, budgets, darks = set(), set(), []
    for level in (1, 5):
        with Session(f"luminescence/{level}/n3+diagonal+dec1", secret="wording") as session:
            statements.add(session.reset(0)["task"])
            budgets.add(json.dumps(session.task.budget.as_dict()))
            darks.append(session.lab.shared["reader_backend"].truth.dark_cps)
    assert len(statements) == 1 and len(budgets) == 2
    assert darks[1] == pytest.approx(darks[0] * LEVEL[5].dark)  # the same draw, raised


def test_the_statement_names_the_wells_and_tells_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        observation = session.reset(9)
        text = observation["task"]
        truth = session.task.truth(session.lab)
        shown = session.call_tool("lh_get_deck", {}).unwrap()
    for words in (
        "4 samples",
        "sample_1 in C2, sample_2 in C4, sample_3 in C6, sample_4 in C8",
        "positive control in B2",
        "reader_read_luminescence",
        "submit_luminescence",
        "leak into a well beside it",
    ):
        assert words in text
    labels = shown["labels"]
    assert labels["plate_1:C2"] == "sample_1" and "control" in labels["plate_1:B2"]
    assert "ATP standard 1 µM" in labels[STANDARD]
    deck = json.dumps(shown)
    for value in truth.values():
        for figure in (f"{value:.3g}", f"{value * 1e3:.3g}", f"{value * 1e-3:.3g}"):
            digits = len(figure.split("e")[0].replace(".", "").lstrip("-0"))
            assert digits < 3 or figure not in text + deck, figure
    with Session("luminescence/3/n4+none+dec2", secret="leak") as session:
        assert "leak into a well beside it" not in session.reset(0)["task"]


def test_the_truth_is_what_the_wells_hold() -> None:
    with Session("luminescence/2/n3+none+dec3", secret="truth") as session:
        for seed in range(3):
            session.reset(seed)
            world = session.lab.shared["world"]
            truth = session.task.truth(session.lab)
            for i, well in enumerate(sample_wells(3)):
                molar = world.peek(f"plate_1:{well}").concentration(SPECIES)
                assert molar * 1e9 == pytest.approx(truth[f"sample_{i + 1}_nm"])
                low = nm_of(LEVEL[2].floor_cps)
                assert low <= truth[f"sample_{i + 1}_nm"] <= low * 1e3
            yields = world.species[SPECIES].luminescence["photons_per_s_per_pmol"]
            factor = truth["yield_factor"] * truth["efficiency_factor"]
            assert yields == pytest.approx(2e5 * factor)
        session.reset(1)
        first = session.task.truth(session.lab)
        session.reset(1)
        assert session.task.truth(session.lab) == first


def _submission(value: float = 1.0, sd: float = 0.1, n: int = 4) -> dict:
    names = [f"sample_{j + 1}" for j in range(n)]
    return submission(names, [value] * n, [sd] * n, "nanomolar")


def test_a_bad_submission_is_refused_and_changes_nothing() -> None:
    with Session(INSTANCE, secret="refusal") as session:
        session.reset(0)
        before = session.lab.shared["world"].peek("plate_1:C2").volume_ul
        twice = _submission()
        twice["estimates"][2]["sample"] = "sample_1"
        for arguments in (
            _submission(value=0.0),
            _submission(value=-1.0),
            _submission(sd=-0.1),
            _submission(n=3),
            _submission(n=5),
            twice,
            {"concentrations": {}, "uncertainties": {}},
        ):
            result = session.call_tool("submit_luminescence", arguments)
            assert not result.ok and result.error is not None
        assert session.task.submission is None and not session.done
        assert session.lab.shared["world"].peek("plate_1:C2").volume_ul == before
        assert session.call_tool("submit_luminescence", _submission()).ok and session.done


def test_same_seed_same_calls_same_reward() -> None:
    with Session(INSTANCE, secret="determinism") as session:
        first = evaluate(INSTANCE, "expert", [7], k=1, session=session)
        again = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    with Session(INSTANCE, secret="determinism") as session:
        fresh = evaluate(INSTANCE, "expert", [7], k=1, session=session)
    assert first == again == fresh


def test_the_package_yield_misses_by_the_lot_and_the_standard_finds_it() -> None:
    """Far from the dark floor and the control, a read converted with the package's yield is off
    by exactly the lot's and the reader's factors; the expert's standard takes them off."""
    with Session("luminescence/1/n3+none+dec2", secret=DEV_SECRET) as session:
        for seed in range(4):
            shortcut = run_episode(session, "no_controls", seed)
            truth = session.task.truth(session.lab)
            factor = truth["yield_factor"] * truth["efficiency_factor"]
            for i in range(3):
                ratio = shortcut.components[f"sample_{i + 1}_ratio"]
                assert ratio == pytest.approx(factor, rel=0.05)
            expert = run_episode(session, "expert", seed)
            for i in range(3):
                assert expert.components[f"sample_{i + 1}_ratio"] == pytest.approx(1.0, rel=0.05)


def test_the_leak_beside_the_control_is_measured_and_taken_off(monkeypatch) -> None:
    """At level 5 the control's leak outshines its neighbour: the expert without its probes
    (the leak taken as nothing) misses sample_1 far more often than the expert."""
    instance = "luminescence/5/n3+edge+dec1"
    seeds = range(8)
    with Session(instance, secret=DEV_SECRET) as session:
        honest = [run_episode(session, "expert", s).components["sample_1_ratio"] for s in seeds]
        monkeypatch.setattr(luminescence_expert, "_probes", lambda hot, samples: ("H1", "H3"))
        blind = [run_episode(session, "expert", s).components["sample_1_ratio"] for s in seeds]
    error = [abs(math.log(r)) for r in honest]
    blind_error = [abs(math.log(r)) for r in blind]
    assert statistics.median(error) < 0.05
    assert statistics.median(blind_error) > 5 * statistics.median(error)
    assert all(r > 1.0 for r in blind)  # the leak read as the sample's own light
