"""The hypothesis family: claims in a checkable grammar, their prior probability from the
family's own draws, stated before any measurement, and a verdict scored by how much the claim
was worth testing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labtools.demo.protocol import batch
from labtools.errors import InvalidArguments, ToolError, UnitError
from labtools.session import Session
from labtools.simulators.families.claims import Claim, parse_claim, prior_probability

CANDIDATES = ("tartrazine", "brilliant_blue", "methylene_blue")
INSTANCE = "hypothesis/2/tartrazine+brilliant_blue+methylene_blue"
#: four candidates: one to three present, each number equally likely
FOUR = "hypothesis/1/tartrazine+brilliant_blue+nadh+methylene_blue"


@pytest.mark.parametrize(
    ("text", "claim"),
    [
        ("tartrazine present", Claim("present", analyte="tartrazine")),
        ("  Tartrazine   ABSENT ", Claim("absent", analyte="tartrazine")),
        ("brilliant_blue above 12 µM", Claim("above", analyte="brilliant_blue", micromolar=12.0)),
        ("brilliant_blue below 0.5 mM", Claim("below", analyte="brilliant_blue", micromolar=500)),
        ("tartrazine above methylene_blue", Claim("exceeds", "tartrazine", "methylene_blue")),
        ("tartrazine below methylene_blue", Claim("exceeds", "methylene_blue", "tartrazine")),
        ("at least 2 present", Claim("at_least", count=2)),
        ("At most 1 present", Claim("at_most", count=1)),
    ],
)
def test_the_grammar_reads_each_form(text: str, claim: Claim) -> None:
    parsed = parse_claim(text, CANDIDATES)
    assert parsed == claim
    assert parse_claim(str(parsed), CANDIDATES) == parsed  # its canonical text reads back


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("nadh present", InvalidArguments),  # not a candidate here
        ("tartrazine", InvalidArguments),
        ("tartrazine present now", InvalidArguments),
        ("tartrazine above", InvalidArguments),
        ("tartrazine above tartrazine", InvalidArguments),
        ("tartrazine above 12 µm", UnitError),  # micrometres: a length
        ("tartrazine above 12", UnitError),  # no unit
        ("tartrazine above nan µM", UnitError),  # no number
        ("tartrazine above 1e30 M", InvalidArguments),
        ("tartrazine above -3 µM", InvalidArguments),
        ("at least 4 present", InvalidArguments),
        ("x" * 300, InvalidArguments),
        (12, InvalidArguments),
        ({"claim": "tartrazine present"}, InvalidArguments),
    ],
)
def test_anything_else_is_refused_with_the_field_and_the_grammar(
    text: object, error: type[ToolError]
) -> None:
    with pytest.raises(error) as refused:
        parse_claim(text, CANDIDATES)
    assert refused.value.field == "claim" and refused.value.hint


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80) | st.from_regex(r"(tartrazine|at least) [ -~µ]{0,30}"))
def test_no_text_breaks_the_parser(text: str) -> None:
    try:
        claim = parse_claim(text, CANDIDATES)
    except ToolError as refused:
        assert refused.field == "claim"
    else:
        assert parse_claim(str(claim), CANDIDATES).kind == claim.kind


def test_a_claims_prior_is_its_share_of_the_familys_draws() -> None:
    with Session(FOUR, secret="prior") as session:
        task = session.task
        draws = task.draws()
        # one to three of four present, each number equally likely: P(a given one) = 1/2
        assert prior_probability(Claim("present", analyte="nadh"), draws) == pytest.approx(
            0.5, abs=0.025
        )
        assert prior_probability(Claim("at_least", count=2), draws) == pytest.approx(
            2 / 3, abs=0.025
        )
        assert prior_probability(Claim("at_least", count=1), draws) == 1.0
        assert prior_probability(Claim("at_most", count=3), draws) == 1.0
        expert = task.worthiest()
        assert task.prior_of(expert) == pytest.approx(0.5, abs=0.01)
        # the same claim, the same prior whatever the episode: it is no window on the truth
        answers = []
        for seed in (1, 2):
            session.reset(seed)
            answers.append(session.call_tool("state_hypothesis", {"claim": str(expert)}).unwrap())
        assert answers[0] == answers[1]


def test_a_hypothesis_comes_before_any_measurement() -> None:
    with Session(INSTANCE, secret="order") as session:
        session.reset(0)
        refused = session.call_tool("submit_hypothesis", {"probability": 0.5})
        assert not refused.ok and refused.error["code"] == "precondition_failed"
        assert not session.done
        stated = session.call_tool("state_hypothesis", {"claim": "tartrazine present"}).unwrap()
        assert stated["claim"] == "tartrazine present"
        assert stated["worth"] == pytest.approx(
            4 * stated["prior_probability"] * (1 - stated["prior_probability"])
        )
        session.call_tool("state_hypothesis", {"claim": "at least 2 present"}).unwrap()
        moves = [("reservoir:A10", "plate_1:A1", 200.0)]
        session.call_tool("lh_transfer", batch(moves, "new", channels=[0])).unwrap()
        session.call_tool("lh_move_plate", {"plate": "plate_1", "destination": "reader"}).unwrap()
        wavelength = {"value": 430, "unit": "nanometer"}
        read = {"plate": "plate_1", "wavelength": wavelength, "wells": ["A1"]}
        session.call_tool("reader_read_absorbance", read).unwrap()
        late = session.call_tool("state_hypothesis", {"claim": "tartrazine present"})
        assert not late.ok and late.error["code"] == "precondition_failed"
        assert session.task.state()["hypothesis"] == "at least 2 present"
        for bad in (1.5, -0.1, float("nan"), "0.5", None):
            result = session.call_tool("submit_hypothesis", {"probability": bad})
            assert not result.ok and result.error["field"]
            assert not session.done and session.task.submission is None
        session.call_tool("submit_hypothesis", {"probability": 0.9}).unwrap()
        reward = session.score()
        truth = session.task.truth(session.lab)
        holds = float(len(truth) >= 2)
        worth = reward.components["worth"]
        assert reward.components["holds"] == holds
        assert reward.components["outcome"] == pytest.approx(worth * (1 - (0.9 - holds) ** 2))


def test_a_claim_the_prior_settles_is_worth_nothing_and_a_wrong_verdict_little() -> None:
    with Session(INSTANCE, secret="shortcuts") as session:
        session.reset(5)
        session.task.trivial(session)
        trivial = session.score()
        session.reset(5)
        session.task.wrong_verdict(session)
        wrong = session.score()
        session.reset(5)
        session.task.expert(session)
        expert = session.score()
    assert trivial.components["worth"] == 0.0 and trivial.raw == 0.0
    assert trivial.components["process"] == expert.components["process"]  # the same experiment
    assert wrong.components["worth"] == expert.components["worth"] > 0.99
    assert expert.components["verdict"] > 0.99 and wrong.components["verdict"] < 0.05


def test_the_statement_tells_the_prior_and_no_truth() -> None:
    with Session(INSTANCE, secret="leak") as session:
        observation = session.reset(9)
        truth = session.task.truth(session.lab)
        deck = json.dumps(session.call_tool("lh_get_deck", {}).unwrap())
        shown = observation["task"] + deck
        assert "state_hypothesis" in shown and "log-uniform" in shown
        for value in truth.values():
            for text in (f"{value:.3g}", f"{value:.4g}"):
                assert text not in shown
