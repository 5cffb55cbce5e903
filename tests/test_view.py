"""The live view without a browser: the lab's watchers, what the view reads, its server's
endpoints and stream, and that watching changes nothing."""

from __future__ import annotations

import json
import logging
import urllib.request

import pytest

from labtools import Lab
from labtools.journal import WALL_CLOCK_KEYS
from labtools.view import view
from labtools.view.scene import Calls, Scene, call_entry, plate_reading

UL = "microliter"


def _volume(value: float) -> dict[str, object]:
    return {"value": value, "unit": UL}


def _dye_into_a1(lab: Lab) -> None:
    lab.call("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
    lab.call(
        "lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A5", "volume": _volume(100)}]}
    )
    lab.call(
        "lh_dispense", {"items": [{"channel": 0, "well": "plate_1:A1", "volume": _volume(100)}]}
    )


def test_a_watcher_gets_each_calls_event_until_it_stops():
    lab = Lab.virtual(0)
    seen: list[dict[str, object]] = []
    stop = lab.watch(seen.append)
    lab.call("lh_get_deck", {})
    lab.call("lh_pick_up_tips", {"tip_rack": "nope", "channels": [0]})
    stop()
    lab.call("lh_get_deck", {})
    assert [(e["tool"], e["ok"]) for e in seen] == [
        ("lh_get_deck", True),
        ("lh_pick_up_tips", False),
    ]
    assert seen[1]["error"]["code"] == "unknown_resource"


def test_a_failing_watcher_never_fails_the_call(caplog):
    lab = Lab.virtual(0)

    def broken(event: dict[str, object]) -> None:
        raise ValueError("broken watcher")

    lab.watch(broken)
    with caplog.at_level(logging.ERROR):
        result = lab.call("lh_get_deck", {})
    assert result.ok
    assert "a watcher of lh_get_deck failed" in caplog.text


def test_the_scene_shows_belief_colours_and_the_plate_in_the_reader():
    lab = Lab.virtual(0)
    scene = Scene(lab)
    before, moved = scene.read()
    assert moved and before["clock_s"] == 0.0
    assert before["decks"]["lh"]["volumes"]["reservoir:A5"] == 15000.0
    assert "plate_1:A1" not in before["colours"]
    layout = scene.layout()["decks"]["lh"]
    boxes = {b["name"]: b for b in layout["boxes"]}
    assert boxes["plate_1"]["site"] == "plate_carrier-1" and boxes["reader"]["kind"] == "reader"
    assert (
        len(layout["tips"]) >= 4 * 96
        and len([w for w in layout["wells"] if w["labware"] == "plate_1"]) == 96
    )
    _dye_into_a1(lab)
    after, moved = scene.read()
    assert not moved  # nothing moved: the layout is not sent again
    assert after["decks"]["lh"]["tips_used"] == ["tips_300ul:A1"]
    assert after["decks"]["lh"]["volumes"]["plate_1:A1"] == 100.0  # believed
    blue = after["colours"]["plate_1:A1"]
    red, _, b = (int(blue[i : i + 2], 16) for i in (1, 3, 5))
    assert b > red and b > 200  # brilliant blue
    assert after["clock_s"] > 0
    lab.call("lh_move_plate", {"plate": "plate_1", "destination": "reader"})
    _, moved = scene.read()
    boxes = {b["name"]: b for b in scene.layout()["decks"]["lh"]["boxes"]}
    assert moved and boxes["plate_1"]["site"] == "reader"


def test_a_refusal_reads_with_its_code_field_and_hint():
    lab = Lab.virtual(0)
    calls = Calls()
    lab.watch(calls)
    lab.call(
        "lh_dispense", {"items": [{"channel": 5, "well": "plate_1:B1", "volume": _volume(10)}]}
    )
    (entry,) = calls.since(0)
    assert entry["ok"] is False and entry["shadow"] is False
    assert entry["error"]["code"] == "precondition_failed"
    assert entry["error"]["field"] == "/items/0/channel"
    assert "lh_pick_up_tips" in entry["error"]["hint"]
    assert calls.since(1) == []


def test_a_long_result_is_cut_for_the_log():
    entry = call_entry(1, {"tool": "t", "ok": True, "data": {"x": "y" * 10_000}, "seq": 1})
    assert len(entry["result"]) == 240 and entry["result"].endswith("…")


def test_the_server_serves_the_page_the_state_and_a_stream():
    lab = Lab.virtual(0)
    with view(lab) as url:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=10) as response:
            html = response.read().decode()
        assert response.headers["Content-Type"].startswith("text/html")
        # one self-contained file: no script, style or image from anywhere
        for attribute in ("src=", "href=", "@import", "url("):
            assert attribute not in html
        _dye_into_a1(lab)
        with urllib.request.urlopen(url + "events", timeout=10) as stream:
            names, data = [], {}  # the events until the state after the calls has come
            while "plate_1:A1" not in data.get("state", {}).get("colours", {}):
                line = stream.readline().decode().rstrip("\n")
                if line.startswith("event: "):
                    names.append(line[7:])
                elif line.startswith("data: "):
                    data[names[-1]] = json.loads(line[6:])
        assert names[:3] == ["layout", "state", "calls"]
        assert [c["tool"] for c in data["calls"]] == [
            "lh_pick_up_tips",
            "lh_aspirate",
            "lh_dispense",
        ]
        assert data["state"]["decks"]["lh"]["tips_used"] == ["tips_300ul:A1"]
        with urllib.request.urlopen(url + "state", timeout=10) as response:
            assert json.loads(response.read())["decks"]["lh"]["volumes"]["plate_1:A1"] == 100.0
    assert lab._watchers == ()  # the view stopped watching


def _journal(lab: Lab) -> list[dict[str, object]]:
    return [{k: v for k, v in e.items() if k not in WALL_CLOCK_KEYS} for e in lab.journal.events()]


def test_watching_changes_nothing_the_lab_does():
    plain, viewed = Lab.virtual(7), Lab.virtual(7)
    _dye_into_a1(plain)
    with view(viewed) as url, urllib.request.urlopen(url + "events", timeout=10) as stream:
        stream.readline()  # a page is connected: the state is being read
        _dye_into_a1(viewed)
        read = viewed.call(
            "reader_read_absorbance",
            {"plate": "plate_1", "wavelength": {"value": 630, "unit": "nanometer"}},
        )
    plain_read = plain.call(
        "reader_read_absorbance",
        {"plate": "plate_1", "wavelength": {"value": 630, "unit": "nanometer"}},
    )
    assert read.to_dict() == plain_read.to_dict()
    assert _journal(viewed) == _journal(plain)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1"])
def test_the_command_serves_loopback_only(host, capsys):
    from labtools.cli import main

    assert main(["view", "--host", host, "--exit"]) == 2
    assert "loopback" in capsys.readouterr().err


def test_serve_with_view_serves_the_mcp_servers_lab():
    import re
    import subprocess
    import sys
    from pathlib import Path

    labtools = Path(sys.executable).with_name("labtools")
    process = subprocess.Popen(
        [str(labtools), "serve", "--view", "--view-port", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        lines = []  # the server's first lines on stderr, until the view's address
        found = None
        while found is None and len(lines) < 50:
            lines.append(process.stderr.readline())
            found = re.search(r"live view at (http://127\.0\.0\.1:\d+/)", lines[-1])
            if not lines[-1]:
                break  # stderr closed: the server stopped
        assert found, lines
        with urllib.request.urlopen(found.group(1) + "state", timeout=30) as response:
            state = json.loads(response.read())
        assert state["decks"]["lh"]["volumes"]["reservoir:A1"] == 15000.0
    finally:
        assert process.stdin is not None
        process.stdin.close()  # the end of stdio: the server stops
        process.wait(timeout=60)


def test_a_fast_run_sends_its_most_recent_calls():
    lab = Lab.virtual(0)
    calls = Calls(kept=4)
    lab.watch(calls)
    for _ in range(6):
        lab.call("lh_get_deck", {})
    assert [e["n"] for e in calls.since(0)] == [3, 4, 5, 6]  # the 4 kept
    assert [e["n"] for e in calls.since(0, limit=2)] == [5, 6]
    assert [e["n"] for e in calls.since(5, limit=2)] == [6]
    assert calls.since(6) == []


def test_a_lab_without_a_deck_or_world_shows_its_state_and_calls(lab):
    scene = Scene(lab)
    state, moved = scene.read()
    assert not moved and state["decks"] == {} and state["colours"] == {}
    assert set(state["instruments"]) == set(lab.instruments)
    json.dumps(state)  # JSON-able


def test_a_session_is_viewed_through_its_lab():
    from labtools.session import Session

    with Session("standard_curve") as session:
        session.reset(seed=3)
        with view(session) as url:
            with urllib.request.urlopen(url + "state", timeout=30) as response:
                state = json.loads(response.read())
            assert "lh" in state["decks"] and state["colours"]


def test_the_latest_plate_reading_is_found_among_the_calls():
    read = {
        "tool": "reader_read_absorbance",
        "ok": True,
        "data": {
            "plate": "plate_1",
            "wavelength": {"value": 500.0, "unit": "nanometer"},
            "unit": "OD",
            "values": {"A2": 0.04},
            "saturated": [],
            "over_range": ["A1"],
        },
    }
    assert plate_reading(7, read) == {
        "n": 7,
        "tool": "reader_read_absorbance",
        "plate": "plate_1",
        "unit": "OD",
        "wavelength_nm": 500.0,
        "values": {"A2": 0.04},
        "saturated": [],
        "over_range": ["A1"],
    }
    assert plate_reading(1, {"tool": "lh_get_deck", "ok": True, "data": {"labware": []}}) is None
    assert plate_reading(1, {**read, "ok": False}) is None
    calls = Calls()
    calls(read)
    calls({"tool": "lh_get_deck", "ok": True, "data": {}})
    assert calls.latest_reading()["n"] == 1
