"""Replay in the view read from a run bundle, an episode's journal and an eval export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from labtools import Lab
from labtools.journal import read_journal
from labtools.records.bundle import write_bundle
from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET
from labtools.session.trajectory import from_session, write_jsonl
from labtools.view import ReplayError, replay_journal
from labtools.view.scene import Calls, Scene

TASK = "standard_curve"


def test_a_run_bundle_replays_as_its_journal(tmp_path):
    journal = tmp_path / "calls.jsonl"
    lab = Lab.virtual(1, journal=journal)
    lab.lh.pick_up_tips("tips_300ul", [0])
    lab.lh.aspirate([{"channel": 0, "well": "reservoir:A5", "volume": "100 uL"}])
    lab.lh.dispense([{"channel": 0, "well": "plate_1:A1", "volume": "100 uL"}])
    lab.close()
    bundle = write_bundle(read_journal(journal), tmp_path / "bundle")
    replay = replay_journal(bundle.path)
    assert replay.source == "bundle" and replay.n == 3 and replay.diverged == []
    assert replay.states == replay_journal(journal).states
    (bundle.path / "journal.jsonl").write_text("")  # a changed bundle is refused
    with pytest.raises(ReplayError, match=r"no longer match its manifest: \['journal.jsonl'\]"):
        replay_journal(bundle.path)
    (tmp_path / "folder").mkdir()
    with pytest.raises(ReplayError, match="not a run bundle"):
        replay_journal(tmp_path / "folder")


def _episode(tmp_path: Path, seed: int, secret: str = DEV_SECRET) -> tuple[Session, Path]:
    session = Session(TASK, secret=secret, journal_dir=tmp_path / "episodes")
    session.reset(seed)
    session.task.expert(session)
    path = next((tmp_path / "episodes").glob("*.jsonl"))
    return session, path


def _scene(state: dict[str, Any]) -> dict[str, Any]:
    state = json.loads(json.dumps(state, default=repr))
    return {k: v for k, v in state.items() if k != "layout_version"}


def test_an_episode_replays_on_its_task_seed_and_secret(tmp_path):
    session, path = _episode(tmp_path, seed=5)
    calls = [e for e in read_journal(path) if "tool" in e]
    session.close()
    replay = replay_journal(path)
    assert replay.n == len(calls) > 3 and replay.diverged == []
    assert [c["tool"] for c in replay.calls] == [e["tool"] for e in calls]
    for k in (0, 3, replay.n):  # a session that made the first k calls shows the same
        again = Session(TASK, secret=DEV_SECRET)
        again.reset(5)
        watcher = Calls()
        again.lab.watch(watcher)
        for event in calls[:k]:
            again.call_tool(event["tool"], event["arguments"])
        assert _scene(replay.state(k)) == _scene(Scene(again.lab, watcher).read()[0])
        again.close()


def test_an_episode_under_another_secret_needs_it(tmp_path):
    session, path = _episode(tmp_path, seed=2, secret="a lab's own secret")
    session.close()
    with pytest.raises(ReplayError, match=r"recorded under a secret: give it \(--secret\)"):
        replay_journal(path)
    with pytest.raises(ReplayError, match="another secret than the one given"):
        replay_journal(path, secret="not that one")
    assert replay_journal(path, secret="a lab's own secret").diverged == []


def test_an_eval_exports_record_replays_as_its_episode(tmp_path):
    records, journals = [], []
    for seed in (0, 1):
        session, path = _episode(tmp_path / str(seed), seed)
        records.append({**from_session(session), "agent": "expert"})  # as eval writes it
        journals.append(path)
        session.close()
    export = tmp_path / f"{TASK}.jsonl"
    write_jsonl(export, records)
    for n, journal in enumerate(journals, start=1):
        replay = replay_journal(export, episode=n)
        assert replay.source == f"{TASK}.jsonl #{n} (expert, seed {n - 1})"
        assert replay.diverged == []
        assert replay.states == replay_journal(journal).states
    with pytest.raises(ReplayError, match="no episode 3: it holds 2"):
        replay_journal(export, episode=3)
