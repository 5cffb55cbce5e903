"""The journal keeps a bounded amount in memory, and in its files, which rotate by size."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labtools import Lab
from labtools.journal import BACKUPS, KEEP, MAX_BYTES, Journal, read_journal


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


def _line(seq: int) -> int:
    """Bytes of event ``{"seq": seq}``'s line in the file."""
    return len(f'{{"seq":{seq}}}\n')


@given(
    max_bytes=st.integers(min_value=1, max_value=400),
    backups=st.integers(min_value=0, max_value=4),
    calls=st.integers(min_value=0, max_value=120),
)
@settings(max_examples=60, deadline=None)
def test_a_file_journal_rotates_by_size(max_bytes: int, backups: int, calls: int) -> None:
    """Each file stays within ``max_bytes`` (unless one event alone is larger), at most
    ``backups`` rotated files are kept, named as logging's rotating handler names them, and
    together they hold the most recent events in order. ``backups=0`` never rotates (as in
    :mod:`logging`): one file with every event."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "calls.jsonl"
        journal = Journal(path, max_bytes=max_bytes, backups=backups)
        for event in _events(calls):
            journal.record(event)
        files = journal.files()
        names = sorted(p.name for p in Path(folder).iterdir())
        assert names == sorted(p.name for p in files)
        assert set(names) <= {"calls.jsonl", *(f"calls.jsonl.{n}" for n in range(1, backups + 1))}
        if not backups:
            assert names == ["calls.jsonl"] and journal.count == len(read_journal(path))
        else:
            for file in files:
                assert file.stat().st_size <= max_bytes or len(read_journal(file)) == 1
        seqs = [e["seq"] for e in journal.events()]
        assert seqs == list(range(calls - len(seqs) + 1, calls + 1))  # the most recent, in order
        if backups and calls:
            # nothing is lost before the backups are full; logging's handler rotates before
            # a line that would bring the file to max_bytes, not only past it
            total = sum(_line(n) for n in range(1, calls + 1))
            if total < max_bytes:
                assert len(seqs) == calls and names == ["calls.jsonl"]
        journal.close()


def test_a_file_journal_rotates_at_its_default_limit(tmp_path: Path) -> None:
    """Defaults: :data:`MAX_BYTES` per file, :data:`BACKUPS` rotated files kept."""
    journal = Journal(tmp_path / "calls.jsonl")
    assert (journal.max_bytes, journal.backups) == (MAX_BYTES, BACKUPS) == (64 * 2**20, 5)
    journal.close()


def test_a_lab_journal_rotates_into_numbered_files(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    journal = Journal(path, max_bytes=4000, backups=2)
    with Lab.virtual(seed=0, journal=journal) as lab:
        for _ in range(60):
            lab.call("lh_get_deck", {"unexpected": 1})
        kept = lab.journal.events()
    assert [p.name for p in journal.files()] == ["calls.jsonl.2", "calls.jsonl.1", "calls.jsonl"]
    assert all(p.stat().st_size <= 4000 for p in journal.files())
    assert kept[-1]["seq"] == 60 and [e["seq"] for e in kept] == list(range(kept[0]["seq"], 61))
    assert kept[0]["seq"] > 1  # the oldest file was rotated away


def test_rotation_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_bytes and backups"):
        Journal(max_bytes=-1)
    with pytest.raises(ValueError, match="max_bytes and backups"):
        Journal(backups=-2)


def test_a_new_journal_leaves_no_rotated_file_of_an_earlier_one(tmp_path: Path) -> None:
    old = Journal(tmp_path / "calls.jsonl", max_bytes=200, backups=3)
    for n in range(20):
        old.record({"n": n, "pad": "x" * 50})
    old.close()
    assert len(old.files()) == 4  # the current file and three rotated ones
    new = Journal(tmp_path / "calls.jsonl", max_bytes=200, backups=3)
    new.record({"n": 0})
    assert new.files() == [tmp_path / "calls.jsonl"]
    assert new.events() == [{"n": 0}]


def test_a_journal_that_cannot_write_raises(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "calls.jsonl")
    journal._file.stream.close()  # type: ignore[union-attr]  # the disk gone from under it
    with pytest.raises(ValueError, match="closed file"):
        journal.record({"n": 1})
