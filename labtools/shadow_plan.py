"""Preflight: a whole plan run on a lab's shadow twin before anything moves.

A plan is a journal (``.jsonl``, as :class:`~labtools.journal.Journal` writes it: each event with
a ``tool`` is called again, with its ``arguments``, in order) or a Python protocol (``.py``): a
file defining ``run(lab)``, called with the twin, a :class:`~labtools.lab.Lab` whose tools are
used as on the real lab (``lab.lh.transfer(...)``, ``lab.call(name, arguments)``). A protocol
that calls through ``lab.<instrument>.<tool>`` stops at the first refusal (the proxy raises it);
one that uses ``lab.call`` sees each result and may go on.

:func:`preflight` returns a :class:`PreflightReport`: each refusal (the call's number, tool and
error), the tips used per rack, the reagent used per source container (the fall in its believed
volume), a summary of every predicted reading, and the virtual time the plan takes.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labtools.errors import ToolError
from labtools.journal import Journal, read_journal

if TYPE_CHECKING:
    from labtools.lab import Lab

__all__ = ["PlanError", "PreflightReport", "load_plan", "preflight"]

#: a plan's calls kept for the report (a journal without a file keeps this many)
MAX_CALLS = 1_000_000
_SKIP = ("values", "saturated", "over_range")


class PlanError(ValueError):
    """A plan file that cannot be run (not a journal, no ``run(lab)``)."""


@dataclass
class PreflightReport:
    """What a plan did on the twin. ``ok``: nothing was refused and the plan ran to its end."""

    plan: str
    calls: int = 0
    refusals: list[dict[str, Any]] = field(default_factory=list)
    tips_used: dict[str, int] = field(default_factory=dict)
    reagent_ul: dict[str, dict[str, Any]] = field(default_factory=dict)
    readings: list[dict[str, Any]] = field(default_factory=list)
    virtual_s: float | None = None
    stopped: str | None = None

    @property
    def ok(self) -> bool:
        return not self.refusals and self.stopped is None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def text(self) -> str:
        """The report as lines a person reads."""
        verdict = "ok" if self.ok else f"{len(self.refusals)} refused"
        lines = [f"preflight {self.plan}: {self.calls} calls, {verdict}"]
        for r in self.refusals:
            e = r["error"]
            where = f" (field {e['field']})" if e.get("field") else ""
            lines.append(f"  refused #{r['call']} {r['tool']}: {e['code']}: {e['message']}{where}")
            if e.get("hint"):
                lines.append(f"      hint: {e['hint']}")
        if self.stopped:
            lines.append(f"  the plan stopped: {self.stopped}")
        tips = ", ".join(f"{k} {v}" for k, v in self.tips_used.items()) or "none"
        lines.append(f"tips used: {tips}")
        lines.append("reagent used:" + ("" if self.reagent_ul else " none"))
        for ref, used in self.reagent_ul.items():
            label = f" ({used['label']})" if used.get("label") else ""
            lines.append(
                f"  {ref}{label}: {used['used']:g} µL ({used['start']:g} → {used['end']:g} µL)"
            )
        lines.append(f"predicted readings: {len(self.readings)}")
        for reading in self.readings:
            lines.append(f"  #{reading['call']} {reading['tool']}: {_reading_text(reading)}")
        if self.virtual_s is not None:
            lines.append(f"virtual duration: {_duration(self.virtual_s)}")
        return "\n".join(lines)


def load_plan(path: str | Path) -> Callable[[Lab], None]:
    """The plan at ``path`` as a function of the twin (see the module docstring)."""
    path = Path(path)
    if path.suffix == ".py":
        return _protocol(path)
    try:
        events = read_journal(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PlanError(f"{path}: not a journal (.jsonl) or a protocol (.py): {exc}") from exc
    calls = [(e["tool"], e.get("arguments")) for e in events if isinstance(e, dict) and "tool" in e]

    def replay(lab: Lab) -> None:
        for name, arguments in calls:
            lab.call(name, arguments)

    return replay


def preflight(twin: Lab, plan: Callable[[Lab], None], name: str = "plan") -> PreflightReport:
    """Run ``plan`` on ``twin`` (a shadow's twin, ``lab.shadow.twin``) and report it."""
    twin.connect()
    twin.journal = Journal(keep=MAX_CALLS)
    report = PreflightReport(name)
    before = twin.state()
    start = twin.clock.now() if twin.clock is not None else None
    try:
        plan(twin)
    except ToolError as exc:
        report.stopped = f"{exc.code}: {exc.message}"
    except Exception as exc:  # the protocol's own fault: reported, the preflight fails
        report.stopped = f"{type(exc).__name__}: {exc}"[:300]
    if start is not None and twin.clock is not None:
        report.virtual_s = round(twin.clock.now() - start, 3)
    after = twin.state()
    for event in twin.journal.events():
        report.calls += 1
        if not event.get("ok"):
            report.refusals.append(
                {"call": event["seq"], "tool": event["tool"], "error": event["error"]}
            )
        elif isinstance(event.get("data"), dict) and "values" in event["data"]:
            report.readings.append(_reading(event))
    for inst, state in after.items():
        if isinstance(state, dict) and "tips_left" in state:
            _tips(report, before[inst]["tips_left"], state["tips_left"])
            _reagent(report, before[inst], state)
    return report


# -- plans ---------------------------------------------------------------------------------------
def _protocol(path: Path) -> Callable[[Lab], None]:
    spec = importlib.util.spec_from_file_location(f"labtools_plan_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise PlanError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise PlanError(f"{path}: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.modules.pop(spec.name, None)
    run = getattr(module, "run", None)
    if not callable(run):
        raise PlanError(f"{path}: a protocol defines run(lab)")
    return run


# -- the report ----------------------------------------------------------------------------------
def _tips(report: PreflightReport, before: Mapping[str, int], after: Mapping[str, int]) -> None:
    for rack, left in after.items():
        used = before.get(rack, left) - left
        if used:
            report.tips_used[rack] = report.tips_used.get(rack, 0) + used


def _volumes(state: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for labware in state.get("labware", []):
        for key, ul in labware["wells"].items():
            out[key if ":" in key or key == labware["name"] else f"{labware['name']}:{key}"] = ul
    return out


def _reagent(report: PreflightReport, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    start, end = _volumes(before), _volumes(after)
    labels = after.get("labels", {})
    for ref, ul in start.items():
        left = end.get(ref, 0.0)
        if ul - left > 1e-6:
            report.reagent_ul[ref] = {
                "label": labels.get(ref),
                "start": ul,
                "end": left,
                "used": round(ul - left, 4),
            }


def _reading(event: Mapping[str, Any]) -> dict[str, Any]:
    data = event["data"]
    out: dict[str, Any] = {"call": event["seq"], "tool": event["tool"]}
    out.update({k: v for k, v in data.items() if k not in _SKIP and _small(v)})
    values = data["values"]
    numbers = [
        v
        for v in (values.values() if isinstance(values, dict) else values)
        if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    out["count"] = len(values)
    if numbers:
        out["min"], out["max"] = min(numbers), max(numbers)
        out["mean"] = round(statistics.fmean(numbers), 6)
    return out


def _small(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or (
        isinstance(value, dict) and set(value) == {"value", "unit"}
    )


def _reading_text(reading: Mapping[str, Any]) -> str:
    parts = []
    for key, value in reading.items():
        if key in ("call", "tool", "count", "min", "max", "mean"):
            continue
        shown = f"{value['value']:g} {value['unit']}" if isinstance(value, dict) else value
        parts.append(f"{key} {shown}")
    parts.append(f"{reading['count']} values")
    if "min" in reading:
        parts.append(f"{reading['min']:g} to {reading['max']:g} (mean {reading['mean']:g})")
    return ", ".join(parts)


def _duration(seconds: float) -> str:
    minutes, s = divmod(seconds, 60)
    hours, m = divmod(int(minutes), 60)
    return f"{seconds:g} s" if seconds < 60 else f"{hours} h {m:02d} min {s:04.1f} s"
