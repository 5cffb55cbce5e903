"""What an agent reads before it acts: each task's tool catalogue, per provider format, and its
first observation, in characters of compact JSON.

Per task, and per family at level 3 (the structure, of eight spread over its list, whose OpenAI
Chat catalogue is largest: structures differ in their submit tools): the catalogue in the
OpenAI Chat, Anthropic, Gemini and MCP formats, and the first observation
(``Session.reset``'s), each beside its anchor in the same run — the whole virtual lab's
catalogue in that format, which is what every task offered before tasks offered only their
experiment's tools (:attr:`labtools.session.Task.lab_tools`); and the expert's episode on
seed 0 as an agent would hold it: the OpenAI Chat catalogue, the first observation and every
call's arguments and result. Goals (issue "cheap episodes"): ≤ 8,000 characters in the OpenAI
Chat format, a first observation ≤ 4,000, an expert episode ≤ 15,000.

Run: ``python -m bench.catalogue``.
"""

from __future__ import annotations

from bench.experts import count_exchanges, json_chars
from labtools.lab import Lab
from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, run_episode
from labtools.session.registry import family_ids, load_family, task_ids

FORMATS = ("openai-chat", "anthropic", "gemini", "mcp")
GOAL_OPENAI = 8000
GOAL_OBSERVATION = 4000
GOAL_EPISODE = 15000
SPREAD = 8


def _largest(family: str) -> str:
    """The family's level-3 instance, of :data:`SPREAD` structures spread over its list, whose
    OpenAI Chat catalogue is largest."""
    structures = load_family(family).structures()
    step = max(1, len(structures) // SPREAD)
    sizes = {}
    for structure in structures[::step][:SPREAD]:
        with Session(f"{family}/3/{structure}", secret="bench-catalogue") as session:
            sizes[structure] = json_chars(session.tools("openai-chat"))
    return f"{family}/3/{max(sizes, key=sizes.__getitem__)}"


def _targets() -> list[str]:
    return list(task_ids()) + [_largest(family) for family in family_ids()]


def main() -> None:
    with Lab.virtual(seed=0) as lab:
        whole = {f: json_chars(lab.tools(f)) for f in FORMATS}
    print("characters of compact JSON; beside each format, the share of the whole virtual lab's")
    print(f"catalogue in that format ({', '.join(f'{f} {whole[f]:,}' for f in FORMATS)})")
    header = f"  {'task':<44} {'tools':>5} " + " ".join(f"{f:>16}" for f in FORMATS)
    print(header + f" {'first obs':>10} {'expert episode':>15}")
    worst, episodes = 0, {}
    for task in _targets():
        with Session(task, secret=DEV_SECRET) as session:
            observation = session.reset(0)
            sizes = {f: json_chars(session.tools(f)) for f in FORMATS}
            count = len(session.tool_names())
            exchanged = count_exchanges(session)
            run_episode(session, "expert", 0)
        worst = max(worst, sizes["openai-chat"])
        first = json_chars(observation)
        episodes[task] = sizes["openai-chat"] + first + exchanged[0]
        cells = " ".join(f"{sizes[f]:>9,} ({sizes[f] / whole[f]:.2f})" for f in FORMATS)
        print(f"  {task[:44]:<44} {count:>5} {cells} {first:>10,} {episodes[task]:>15,}")
    verdict = "meets" if worst <= GOAL_OPENAI else "misses"
    print(f"  largest OpenAI Chat catalogue {worst:,}: {verdict} the goal of {GOAL_OPENAI:,}")
    over = sorted(t for t, n in episodes.items() if n > GOAL_EPISODE)
    print(
        f"  expert episodes within {GOAL_EPISODE:,}: {len(episodes) - len(over)} of "
        f"{len(episodes)}"
        + (f" (over: {', '.join(t.split('/')[0] for t in over)})" if over else "")
    )


if __name__ == "__main__":
    main()
