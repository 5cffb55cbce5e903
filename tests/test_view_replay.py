"""Replay in the view: step k is the lab after the journal's first k calls, exactly."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from labtools import Lab
from labtools.view import ReplayError, open_replay, replay_journal
from labtools.view.scene import Calls, Scene

UL = "microliter"
ROOT = Path(__file__).parent.parent


def _volume(value: float) -> dict[str, object]:
    return {"value": value, "unit": UL}


#: the episode the tests replay: a tip, a dye into plate_1:A1, a refusal, the plate read
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]}),
    ("lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A4", "volume": _volume(300)}]}),
    ("lh_dispense", {"items": [{"channel": 0, "well": "plate_1:A1", "volume": _volume(300)}]}),
    ("lh_dispense", {"items": [{"channel": 5, "well": "plate_1:B1", "volume": _volume(10)}]}),
    ("lh_move_plate", {"plate": "plate_1", "destination": "reader"}),
    (
        "reader_read_absorbance",
        {"plate": "plate_1", "wavelength": {"value": 500, "unit": "nanometer"}, "wells": []},
    ),
]


def _run(lab: Lab, calls: list[tuple[str, dict[str, Any]]]) -> None:
    for name, arguments in calls:
        lab.call(name, arguments)


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    path = tmp_path / "calls.jsonl"
    lab = Lab.virtual(3, journal=path)
    _run(lab, CALLS)
    lab.close()
    return path


def _scene(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k != "layout_version"}


def test_step_k_is_the_state_of_a_lab_that_made_the_first_k_calls(journal):
    replay = replay_journal(journal)
    assert replay.n == len(CALLS) and replay.diverged == []
    assert [c["tool"] for c in replay.calls] == [name for name, _ in CALLS]
    assert [c["ok"] for c in replay.calls] == [True, True, True, False, True, True]
    for k in range(replay.n + 1):
        lab = Lab.virtual(3)  # the journal's lab: the virtual lab, seed 3
        calls = Calls()
        lab.watch(calls)
        _run(lab, CALLS[:k])
        state, _ = Scene(lab, calls).read()
        assert _scene(replay.state(k)) == json.loads(json.dumps(_scene(state), default=repr))
        lab.close()
    # what the steps show: the dye, the tip, the refusal changing nothing, the reading
    assert "plate_1:A1" not in replay.state(2)["colours"]
    assert replay.state(3)["colours"]["plate_1:A1"] == replay.state(4)["colours"]["plate_1:A1"]
    assert replay.state(3)["decks"]["lh"]["volumes"]["plate_1:A1"] == 300.0
    assert replay.state(0)["clock_s"] == 0 < replay.state(3)["clock_s"]
    assert replay.state(5)["reading"] is None
    assert replay.state(6)["reading"]["over_range"] == ["A1"]
    assert replay.layout_of == [0, 0, 0, 0, 0, 1, 1]  # the plate moved into the reader


def test_the_seed_comes_from_the_journals_lab_record(journal, tmp_path):
    other = tmp_path / "other.jsonl"
    lab = Lab.virtual(4, journal=other)
    _run(lab, CALLS)
    lab.close()
    three, four = replay_journal(journal), replay_journal(other)
    a1 = [r.state(6)["reading"]["values"].get("B1") for r in (three, four)]
    assert a1[0] != a1[1]  # another seed, another world
    assert three.states == replay_journal(journal).states  # and the same one, the same steps


def test_a_result_other_than_the_journals_is_listed(journal, tmp_path):
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    events[2]["data"] = {"dispensed": "something else"}
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert replay_journal(edited).diverged == [3]


def test_stepping_back_and_forth_serves_the_same_steps(journal):
    replay = replay_journal(journal)
    server = open_replay(replay)
    try:

        def get(path: str) -> bytes:
            with urllib.request.urlopen(server.url + path, timeout=10) as response:
                return bytes(response.read())

        assert b'<body data-mode="replay">' in get("")
        outline = json.loads(get("replay"))
        assert outline["n"] == 6 and len(outline["layouts"]) == 2
        assert [c["n"] for c in outline["calls"]] == [1, 2, 3, 4, 5, 6]
        seen = {k: get(f"replay/{k}") for k in (3, 2, 3, 6, 0, 3)}
        three = json.loads(seen[3])
        assert three["k"] == 3 and three["layout"] == 0
        assert three["state"] == replay.state(3)
        for k in (2, 3, 6, 0):
            assert get(f"replay/{k}") == seen[k]
        with pytest.raises(urllib.error.HTTPError) as refused:
            get("replay/7")
        assert refused.value.code == 404
    finally:
        server.stop()


def test_a_journal_without_a_lab_record_replays_on_the_lab_given(tmp_path):
    path = tmp_path / "bare.jsonl"
    lab = Lab.virtual(0)
    _run(lab, CALLS[:3])
    path.write_text("".join(json.dumps({**e, "lab": None}) + "\n" for e in lab.journal.events()))
    with pytest.raises(ReplayError, match="names no lab file"):
        replay_journal(path)
    replay = replay_journal(path, Lab.virtual(0))
    assert replay.n == 3 and replay.diverged == []
    assert replay.state(3)["decks"]["lh"]["volumes"]["plate_1:A1"] == 300.0


def _with_lab(journal: Path, out: Path, text: str) -> Path:
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    events[0]["lab"] = {**events[0]["lab"], "text": text, "overrides": {}}
    out.write_text("".join(json.dumps(e) + "\n" for e in events))
    return out


def test_files_that_cannot_be_replayed_are_refused(journal, tmp_path):
    def refused(path: Path) -> str:
        with pytest.raises(ReplayError) as caught:
            replay_journal(path)
        return str(caught.value)

    assert refused(tmp_path / "missing.jsonl").endswith("missing.jsonl: no such file")
    toml = ROOT / "docs" / "examples" / "star_dry_run.toml"
    assert "not a journal" in refused(toml)
    (tmp_path / "empty.jsonl").write_text("")
    assert "records no call" in refused(tmp_path / "empty.jsonl")
    (tmp_path / "list.jsonl").write_text("[1, 2]\n")
    assert "not a journal" in refused(tmp_path / "list.jsonl")
    episode = tmp_path / "episode.jsonl"
    call = {"tool": "lh_get_deck", "arguments": {}, "ok": True, "data": {}}
    reset = {"event": "reset", "task": "no_such_task", "seed": 0}
    episode.write_text(json.dumps(reset) + "\n" + json.dumps(call) + "\n")
    assert "its task 'no_such_task' cannot be set up" in refused(episode)
    broken = _with_lab(journal, tmp_path / "broken.jsonl", "[lh]\nclass = 'x:Y'\n")
    said = refused(broken)
    why = said.partition("broken.jsonl: ")[2]  # the temporary copy's path is not said
    assert why.startswith("its lab (virtual_lab.toml) cannot be built: virtual_lab.toml: ")
    assert "unknown table [lh]" in why and "/" not in why
    dry = _with_lab(journal, tmp_path / "dry.jsonl", toml.read_text())
    assert "simulated labs only" in refused(dry)


def test_the_command_replays_and_refuses_bad_files_in_one_line(journal, tmp_path, capsys):
    from labtools.cli import main

    assert main(["view", "--replay", str(journal), "--port", "0", "--exit"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("labtools view: http://127.0.0.1:")
    assert out.out.endswith("(calls.jsonl: 6 calls)\n")
    two = ["view", "--replay", str(journal), "--replay", str(journal), "--episode", "1"]
    assert main([*two, "--port", "0", "--exit"]) == 0
    assert "(calls.jsonl: 6 calls and calls.jsonl: 6 calls)" in capsys.readouterr().out
    assert main([*two, "--replay", str(journal), "--exit"]) == 2
    assert "--replay at most twice" in capsys.readouterr().err
    assert main(["view", "--episode", "2", "--exit"]) == 2
    assert "go with --replay" in capsys.readouterr().err
    for bad in (tmp_path / "missing.jsonl", ROOT / "pyproject.toml"):
        assert main(["view", "--replay", str(bad), "--port", "0", "--exit"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("labtools view: ") and err.count("\n") == 1
    assert main(["view", "--replay", str(journal), "--run", str(journal), "--exit"]) == 2
    assert "give one" in capsys.readouterr().err
