"""The journal keeps a bounded amount in memory, and everything in its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtools import Lab
from labtools.journal import KEEP, Journal, read_journal


def _events(n: int) -> list[dict[str, int]]:
    return [{"seq": i} for i in range(1, n + 1)]


def test_without_a_file_it_keeps_only_the_most_recent_events() -> None:
    journal = Journal()
    for event in _events(KEEP * 2 + 17):
        journal.record(event)
    kept = journal.events()
    assert journal.count == KEEP * 2 + 17
    assert len(kept) == KEEP
    assert [e["seq"] for e in kept] == list(range(KEEP + 18, KEEP * 2 + 18))


def test_keep_sets_how_many_and_zero_keeps_none() -> None:
    small, none = Journal(keep=3), Journal(keep=0)
    for event in _events(10):
        small.record(event)
        none.record(event)
    assert [e["seq"] for e in small.events()] == [8, 9, 10]
    assert none.events() == [] and none.count == 10
    with pytest.raises(ValueError, match="keep must be 0 or more"):
        Journal(keep=-1)


def test_with_a_file_it_keeps_nothing_in_memory_and_every_event_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    journal = Journal(path)
    for event in _events(KEEP + 5):
        journal.record(event)
    assert len(journal._events) == 0  # memory: none; the file has them all
    assert [e["seq"] for e in journal.events()] == list(range(1, KEEP + 6))
    journal.close()
    assert len(read_journal(path)) == KEEP + 5


def test_a_long_lived_lab_keeps_a_bounded_journal() -> None:
    with Lab.virtual(seed=0) as lab:
        for _ in range(KEEP + 50):
            lab.call("lh_get_deck", {"unexpected": 1})  # refused: cheap, and journaled
        events = lab.journal.events()
    assert len(events) == KEEP
    assert events[-1]["seq"] == KEEP + 50 and events[0]["seq"] == 51
