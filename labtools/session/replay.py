"""Replaying an episode from its journal: same task, same seed, same calls ⇒ same everything."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labtools.journal import read_journal
from labtools.session.session import Session

__all__ = ["ReplayReport", "replay"]


@dataclass
class ReplayReport:
    task: str
    seed: int
    calls: int
    differences: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


def replay(
    path: str | Path, session: Session | None = None, *, secret: str | bytes | None = None
) -> ReplayReport:
    """Re-run the episode recorded in the journal at ``path`` and list every difference:
    each call's result, and the final reward breakdown. The episode's truth came from its
    session's secret: give that ``session``, or its ``secret``."""
    events = read_journal(path)
    start = next((e for e in events if e.get("event") == "reset"), None)
    if start is None:
        raise ValueError(f"{path}: no 'reset' event; not an episode journal")
    if session is None:
        if secret is None:
            raise ValueError(f"{path}: replaying needs the session's secret (secret=...)")
        session = Session(start["task"], secret=secret)
    if start.get("secret_id") not in (None, session.secret_id):
        raise ValueError(f"{path}: recorded under another secret than the one given")
    session.reset(start["seed"], task=start["task"])
    report = ReplayReport(start["task"], start["seed"], 0)
    for event in events:
        if "tool" in event:
            report.calls += 1
            result = session.call_tool(event["tool"], event["arguments"]).to_dict()
            _compare(report, f"call {event.get('seq')} {event['tool']}", _recorded(event), result)
        elif event.get("event") == "end":
            _compare(report, "reward", event["reward"], session.score().as_dict())
    return report


def _recorded(event: dict[str, Any]) -> dict[str, Any]:
    if event["ok"]:
        return {"ok": True, "data": event["data"]}
    return {"ok": False, "error": event["error"]}


def _compare(report: ReplayReport, where: str, recorded: Any, now: Any) -> None:
    if _normal(recorded) != _normal(now):
        report.differences.append(f"{where}: recorded {_short(recorded)}, replayed {_short(now)}")


def _normal(value: Any) -> Any:
    """JSON round-trip form (tuples to lists), so recorded and fresh values compare."""
    import json

    return json.loads(json.dumps(value, default=repr))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 200 else text[:197] + "..."
