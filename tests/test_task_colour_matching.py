"""T1 colour matching: statement, submission checks, scoring from the world, protocols."""

from __future__ import annotations

import numpy as np
import pytest

from labtools.session import Session
from labtools.simulators.tasks import colour_matching
from labtools.simulators.tasks.colour_matching import STOCKS, ColourMatching, target_of
from labtools.simulators.world import Mixture


@pytest.fixture(scope="module")
def session():
    with Session("colour_matching", secret="colour matching tests") as session:
        yield session


def _made_exactly(session: Session, well: str, total_ul: float = 200.0, scale: float = 1.0) -> None:
    """Put the hidden recipe (× ``scale``), made without error, in ``well`` (a constructed
    case: straight into the world, as no agent can)."""
    world = session.lab.shared["world"]
    recipe = session.task.recipe(session.lab)
    mix = Mixture(total_ul - sum(recipe.values()))
    for dye, volume in recipe.items():
        molar = world.contents(STOCKS[dye]).concentration(dye)
        mix.add(Mixture.solution(volume * scale, {dye: molar}))
    world.fill(well, mix)


def test_statement_gives_the_target_and_hides_the_recipe(session) -> None:
    observation = session.reset(4)
    statement = observation["task"]
    recipe = session.task.recipe(session.lab)
    assert 2 <= len(recipe) <= 3
    for volume in recipe.values():
        for text in (f"{volume:.1f}", f"{volume:.2f}", f"{volume:.0f} µL"):
            assert text not in statement
    target = target_of(statement)
    assert target.shape == (31,) and 0.1 < target.max() <= 1.8 + 1e-4
    assert session.reset(5)["task"] != statement  # the target changes with the seed
    assert "submit_colour_matching" in session.tool_names()


@pytest.mark.parametrize(
    "arguments, code",
    [
        ({"well": "plate_3:A1"}, "unknown_resource"),
        ({"well": "plate_1:I1"}, "unknown_resource"),
        ({"well": "reservoir:A2"}, "unknown_resource"),
        ({"well": 7}, "invalid_arguments"),
        ({}, "invalid_arguments"),
    ],
)
def test_bad_submissions_are_tool_errors_and_the_episode_goes_on(session, arguments, code) -> None:
    session.reset(1)
    result = session.call_tool("submit_colour_matching", arguments)
    assert not result.ok and result.error["code"] == code
    assert not session.done and session.task.submission is None
    assert session.call_tool("submit_colour_matching", {"well": "plate_2:H12"}).ok
    assert session.terminated


def test_the_recipe_made_exactly_scores_one(session) -> None:
    session.reset(2)
    _made_exactly(session, "plate_2:C3")
    session.call_tool("submit_colour_matching", {"well": "plate_2:C3"}).unwrap()
    reward = session.score()
    assert reward.components["rmse_od"] < 1e-9
    assert reward.components["outcome"] == pytest.approx(1.0)  # no reading: process 0
    assert reward.validity == 1.0 and reward.success


def test_absorbance_follows_the_amounts_and_the_real_liquid_height(session) -> None:
    """More water lowers the concentration and lengthens the path, but not alike: the wells
    taper (PyLabRobot's height–volume table), so 240 µL of the recipe reads a little off the
    200 µL target, while 10 % less of each dye is far off."""
    session.reset(2)
    _made_exactly(session, "plate_1:A1", total_ul=240.0)
    _made_exactly(session, "plate_1:A2", scale=0.9)
    task = session.task
    task.submission = {"well": "plate_1:A1"}
    diluted = task.score(session.lab)
    assert 0.9 < diluted["raw"] < 0.999 and 0.0005 < diluted["rmse_od"] < 0.004
    task.submission = {"well": "plate_1:A2"}
    assert task.score(session.lab)["raw"] < 0.1


def test_an_empty_or_overfull_well_scores_nothing(session) -> None:
    session.reset(3)
    session.call_tool("submit_colour_matching", {"well": "plate_1:H12"}).unwrap()
    empty = session.score()
    assert empty.raw < 1e-6 and empty.validity == 0.0 and empty.total == 0.0
    session.reset(3)
    _made_exactly(session, "plate_1:B2", total_ul=300.0)  # right colour, outside 150–250 µL
    session.call_tool("submit_colour_matching", {"well": "plate_1:B2"}).unwrap()
    overfull = session.score()
    assert overfull.components["outcome"] > 0.1 and overfull.validity == 0.0
    assert overfull.total == 0.0 and not overfull.success


def _mix_well_is_a_defect(session: Session) -> bool:
    """Whether the expert's mix well has a defect's path shortfall (hidden truth, tests only)."""
    name, _, well = colour_matching.MIX_WELL.partition(":")
    plate = session.lab.shared["deck"].deck.get_resource(name)
    defects = session.lab.shared["reader_backend"]._defects(plate)
    index = plate.children.index(plate[well][0])
    return defects is not None and bool(defects.path_loss[index] > 0.05)


def test_expert_beats_naive_and_same_seed_gives_same_reward(session) -> None:
    """On seed 0 (under this secret) the expert's first mix well is a defect, 12.8 % short of
    path, as 2.4 % of a real plate's wells are: water's band shows it, the expert mixes in the
    next well and matches the target as on a sound well (seed 1)."""
    task: ColourMatching = session.task
    for seed in (0, 1):
        session.reset(seed)
        task.expert(session)
        expert = session.score()
        assert _mix_well_is_a_defect(session) == (seed == 0)
        assert task.submission["well"] == ("plate_1:A7" if seed == 0 else "plate_1:A6")
        session.reset(seed)
        task.naive(session)
        naive = session.score()
        assert expert.success and expert.raw > 0.5, expert
        assert naive.raw < 0.1 and expert.raw > naive.raw + 0.4
    session.reset(1)
    task.expert(session)
    assert session.score() == expert


def test_readings_are_corrected_for_stray_light() -> None:
    """The reader's model (T_read = (T + s) / (1 + s)) undone: an opaque well's ceiling gives
    s, and the liquid's absorbance comes back from the readings of the well, full and empty."""
    s = 3e-4

    def read(od: np.ndarray) -> np.ndarray:
        return -np.log10((10.0**-od + s) / (1.0 + s))

    opaque = read(np.array([0.5, 2.0, 9.0, 10.0, 11.0, 12.0]))
    assert colour_matching._stray_light(opaque) == pytest.approx(s, rel=1e-6)
    liquid, plate = np.array([0.0, 0.5, 1.0, 1.8]), 0.045
    got = colour_matching._liquid(read(liquid + plate), read(np.full(4, plate)), s)
    assert got == pytest.approx(liquid, abs=1e-9)
    assert 1.8 - (read(1.8 + plate) - read(plate)) > 0.008  # uncorrected: ~0.01 OD short


def test_no_submission_scores_zero(session) -> None:
    session.reset(6)
    reward = session.score()
    assert reward.raw == 0.0 and reward.total == 0.0 and not reward.success


@pytest.mark.parametrize(
    "well", ["plate_1:A1\n", "plate_1:A1\nplate_1:A2", " plate_1:A1", "plate_1:A1 ", "plate_1:A01"]
)
def test_a_well_must_match_whole(session, well: str) -> None:
    # "$" matched before a trailing newline: "plate_1:A1\n" was taken, then scored as an empty
    # container of that name
    session.reset(1)
    result = session.call_tool("submit_colour_matching", {"well": well})
    assert not result.ok and result.error["code"] == "unknown_resource", result.error
    assert result.error["field"] == "/well"
    assert session.task.submission is None and not session.done


def test_a_megabyte_well_name_is_echoed_brief(session) -> None:
    session.reset(1)
    result = session.call_tool("submit_colour_matching", {"well": "plate_1:" + "A" * (1 << 20)})
    assert result.error["code"] == "unknown_resource"
    assert len(result.error["message"]) < 120
