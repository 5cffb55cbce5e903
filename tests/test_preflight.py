"""``labtools preflight``: a plan (a journal or a Python protocol) run on the lab's shadow twin."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from labtools import Lab
from labtools.cli import main

STAR = str(Path(__file__).parent.parent / "docs" / "examples" / "star_dry_run.toml")

PROTOCOL = """
def run(lab):
    lab.lh.pick_up_tips("tips_300ul", [0])
    lab.lh.transfer(
        [{"source": "reservoir:A2", "destination": "plate_1:A1", "volume": "100 uL"}],
        "", "mounted", [0],
    )
    lab.lh.drop_tips([0])
    lab.lh.move_plate("plate_1", "reader")
    lab.reader.read_absorbance("plate_1", "450 nm", ["A1", "A2"])
"""

OVERDRAW = """
def run(lab):
    lab.lh.pick_up_tips("tips_300ul", [0])
    for well in ("A1", "A2", "A3"):  # plate_2:A1 is empty: every draw overdraws it
        lab.call("lh_aspirate", {"items": [
            {"channel": 0, "well": f"plate_2:{well}", "volume": {"value": 20, "unit": "microliter"}}
        ]})
    lab.lh.aspirate([{"channel": 0, "well": "reservoir:A1", "volume": "50 uL"}])
"""


def preflight(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["preflight", *args])
    return code, capsys.readouterr().out


def test_a_python_protocol_on_the_star_twin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    plan = tmp_path / "protocol.py"
    plan.write_text(PROTOCOL, encoding="utf-8")
    plr_log = logging.getLogger("pylabrobot")
    plr_log.addHandler(caplog.handler)
    try:
        with caplog.at_level(5, logger="pylabrobot"):
            code, out = preflight(capsys, "--lab", STAR, "--json", str(plan))
    finally:
        plr_log.removeHandler(caplog.handler)
    assert code == 0
    report = json.loads(out)
    assert report["ok"] is True and report["calls"] == 5 and report["refusals"] == []
    assert report["tips_used"] == {"tips_300ul": 1}
    assert report["reagent_ul"] == {
        "reservoir:A2": {
            "label": "tartrazine 500 µM ±1 %",
            "start": 10000.0,
            "end": 9900.0,
            "used": 100.0,
        }
    }
    (reading,) = report["readings"]
    assert reading["call"] == 5 and reading["tool"] == "reader_read_absorbance"
    assert reading["count"] == 2 and reading["wavelength"] == {"value": 450.0, "unit": "nanometer"}
    assert reading["max"] > 1.0 > reading["min"]  # the tartrazine well and the empty one
    # pick-up 8 s, transfer (travel, 100 µL at 100 µL/s, settle twice), drop, the move
    assert report["virtual_s"] == pytest.approx(41.16, abs=0.5)
    assert not any("C0" in r.getMessage() for r in caplog.records)  # nothing sent to a STAR


def test_refusals_are_reported_with_their_call_numbers_and_exit_status_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "overdraw.py"
    plan.write_text(OVERDRAW, encoding="utf-8")
    code, out = preflight(capsys, "--lab", STAR, "--json", str(plan))
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False and report["stopped"] is None and report["calls"] == 5
    assert [(r["call"], r["tool"]) for r in report["refusals"]] == [
        (2, "lh_aspirate"),
        (3, "lh_aspirate"),
        (4, "lh_aspirate"),
    ]
    error = report["refusals"][0]["error"]
    assert error["code"] == "interlock" and "overdraw" in error["message"]
    assert error["field"] == "/items/0/volume"
    assert report["reagent_ul"]["reservoir:A1"]["used"] == 50.0

    code, text = preflight(capsys, "--lab", STAR, str(plan))
    assert code == 1
    assert "5 calls, 3 refused" in text and "refused #2 lh_aspirate: interlock:" in text
    assert "reservoir:A1 (water): 50 µL (15000 → 14950 µL)" in text


def test_a_journal_is_called_again_on_the_twin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "run.jsonl"
    with Lab.virtual(journal=journal) as lab:
        lab.lh.pick_up_tips("tips_300ul", [0, 1])
        lab.lh.transfer(
            [
                {"source": "reservoir:A3", "destination": "plate_1:A1", "volume": "60 uL"},
                {"source": "reservoir:A3", "destination": "plate_1:B1", "volume": "60 uL"},
            ],
            "",
            "mounted",
            [0, 1],
        )
        lab.call("lh_aspirate", {"items": [{"channel": 0, "well": "plate_2:H12", "volume": 1}]})
        lab.lh.drop_tips([0, 1])
        lab.lh.move_plate("plate_1", "reader")
        lab.reader.read_absorbance("plate_1", "480 nm", ["A1", "B1", "C1"])
    code, out = preflight(capsys, "--lab", "virtual", "--json", str(journal))
    report = json.loads(out)
    assert code == 1 and report["calls"] == 6  # the call refused then is refused again
    (refusal,) = report["refusals"]
    assert refusal["call"] == 3 and refusal["error"]["code"] == "unit_error"
    assert report["tips_used"] == {"tips_300ul": 2}
    assert report["reagent_ul"]["reservoir:A3"]["used"] == 120.0
    assert report["readings"][0]["count"] == 3


def test_plans_that_cannot_be_run_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_run = tmp_path / "empty.py"
    no_run.write_text("x = 1\n", encoding="utf-8")
    assert main(["preflight", str(no_run)]) == 2
    assert "run(lab)" in capsys.readouterr().err
    garbage = tmp_path / "notes.jsonl"
    garbage.write_text("{not json\n", encoding="utf-8")
    assert main(["preflight", str(garbage)]) == 2


def test_a_protocol_that_raises_stops_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "stops.py"
    plan.write_text(
        "def run(lab):\n"
        "    lab.lh.aspirate([{'channel': 0, 'well': 'reservoir:A1', 'volume': '10 uL'}])\n"
        "    lab.lh.pick_up_tips('tips_300ul', [0])\n",
        encoding="utf-8",
    )
    code, out = preflight(capsys, "--json", str(plan))
    report = json.loads(out)
    assert code == 1 and report["calls"] == 1
    assert report["stopped"].startswith("precondition_failed: channel 0 has no tip")


def test_serve_takes_shadow() -> None:
    import argparse

    from labtools.cli.serve import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    assert parser.parse_args(["serve", "--shadow"]).shadow is True
