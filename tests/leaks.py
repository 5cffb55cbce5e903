"""What an agent can see of an episode, and the two ways it could learn the hidden truth there.

- **Dependence.** A surface that is not a measurement — the statement, the tool definitions in
  every provider format, refusals and their hints, the believed deck, ``state()``, the MCP
  resources, the Gym and OpenEnv observations and infos — must read the same whatever the
  truth: :func:`probe` gathers them under fixed, truth-independent calls, and the tests
  compare two secrets (two truths) for the same seed. This is stricter than looking for
  numbers near hidden values (which, over thousands of numbers, meet by coincidence) and
  catches any leak, however encoded.
- **Verbatim.** Measurements depend on the truth by nature, so they are searched for hidden
  values written out: :func:`assert_not_revealed` looks for every hidden number with seven or
  more significant digits (readings carry at most five), and for the seed and the world seed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from labtools.export import FORMATS
from labtools.session import Session

#: calls whose outcome does not depend on the truth: a look at the deck, and refusals of
#: every kind (unknown rack, wrong unit, unknown tool, a malformed submission)
PROBES: list[tuple[str, dict[str, Any]]] = [
    ("lh_get_deck", {}),
    ("lh_pick_up_tips", {"tip_rack": "tips_9000ul", "channels": [0]}),
    (
        "lh_transfer",
        {
            "transfers": [
                {
                    "source": "reservoir:A1",
                    "destination": "plate_1:A1",
                    "volume": {"value": 50, "unit": "gram"},
                }
            ],
            "tip_rack": "tips_300ul",
        },
    ),
    ("lh_teleport", {}),
]
#: the JSON objects a statement carries as data by design (colour_matching's target spectrum)
_STATEMENT_DATA = re.compile(r"\{[^{}]*\}")


def probe(session: Session, seed: int) -> dict[str, str]:
    """Every non-measurement surface of a fresh episode on ``seed``, as text by name."""
    observation = session.reset(seed)
    seen = {
        "statement": without_data(observation["task"]),
        "observation": dumps({k: v for k, v in observation.items() if k != "task"}),
    }
    seen.update({f"tools/{fmt}": dumps(session.tools(fmt)) for fmt in FORMATS})
    submit = next(name for name in session.tool_names() if name.startswith("submit_"))
    for name, arguments in [*PROBES, (submit, {"nonsense": 1})]:
        seen[f"call/{name}"] = dumps(session.call_tool(name, arguments).to_dict())
    seen["state"] = dumps(without_id(session.state()))
    return seen


def without_data(statement: str) -> str:
    """A statement with the data it carries by design (colour_matching's target) left out."""
    return _STATEMENT_DATA.sub("{…}", statement)


def seen_by_agent(session: Session, observation: dict[str, Any]) -> str:
    """The observation, the session's and the lab's state, and every tool result."""
    seen = [dumps(observation), dumps(session.state()), dumps(session.lab.state())]
    seen += [
        dumps(e.get("data") or e.get("error")) for e in session.lab.journal.events() if "tool" in e
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


def assert_not_revealed(text: str, numbers: list[float], seeds: tuple[int, ...] = ()) -> None:
    """No hidden number written with seven or more significant digits (in its unit, or in
    milli, micro, kilo or mega of it), and none of ``seeds`` as a number of its own."""
    assert numbers, "the world drew hidden values"
    for value in numbers:
        for scale in (1.0, 1e3, 1e6, 1e-3, 1e-6):
            for shown in {repr(value * scale), f"{value * scale:.7g}"}:
                # significant digits: neither leading nor trailing zeros (1000.0 written
                # in µ as 1000000 says one digit, as a hint's "1000000–3600000000" does)
                digits = len(shown.split("e")[0].replace(".", "").lstrip("-0").rstrip("0"))
                if digits >= 7:
                    assert shown not in text, f"hidden value {value} appears as {shown}"
    for seed in seeds:
        assert not re.search(rf"(?<![\d.]){seed}(?![\d])", text), f"the seed {seed} appears"


def without_id(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` without its ``episode_id`` (random by design)."""
    return {k: v for k, v in state.items() if k != "episode_id"}


def dumps(value: Any) -> str:
    """Canonical JSON text, so that two surfaces compare as strings."""
    return json.dumps(value, sort_keys=True, default=repr)
