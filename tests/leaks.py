"""Searching everything an agent can see for the hidden truth of its episode."""

from __future__ import annotations

import json
import math

from labtools.session import Session


def seen_by_agent(session: Session, observation: dict) -> str:
    """The observation, the session's and the lab's state, and every tool result."""
    seen = [json.dumps(observation), json.dumps(session.state()), json.dumps(session.lab.state())]
    seen += [
        json.dumps(e.get("data") or e.get("error"))
        for e in session.lab.journal.events()
        if "tool" in e
    ]
    return " ".join(seen)


def hidden_numbers(value: object) -> list[float]:
    """Every non-zero float in the world's hidden truth."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in hidden_numbers(v)]
    if isinstance(value, list | tuple):
        return [x for v in value for x in hidden_numbers(v)]
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        return [value]
    return []


def assert_not_revealed(text: str, numbers: list[float]) -> None:
    """No hidden number appears with five or more significant digits, nor in milli or micro
    units (M → mM, µM) with six or more (readings carry at most five, so a six-digit match is
    no coincidence)."""
    assert numbers, "the world drew hidden values"
    for value in numbers:
        shown = {repr(value), f"{value:.6g}", f"{value:.5g}"}
        shown |= {f"{value * scale:.6g}" for scale in (1e3, 1e6)}
        for text_form in shown:
            digits = len(text_form.replace(".", "").replace("e", "").lstrip("-0"))
            if digits >= 5:
                assert text_form not in text, f"hidden value {value} appears as {text_form}"
