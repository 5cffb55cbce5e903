"""The labtools command line: tools, call."""

from __future__ import annotations

import json
import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "labtools", *args], capture_output=True, text=True, timeout=180
    )


def test_tools_prints_each_format() -> None:
    names = run("tools", "--names")
    assert names.returncode == 0 and "lh_aspirate" in names.stdout.split()
    gemini = json.loads(run("tools", "--format", "gemini").stdout)
    assert gemini[0]["function_declarations"][0]["name"] == "lh_pick_up_tips"


def test_call_runs_one_tool_and_reports_refusals_with_exit_code_1() -> None:
    good = run("call", "lh_get_deck", "{}")
    assert good.returncode == 0 and json.loads(good.stdout)["ok"] is True
    bad = run("call", "lh_aspirate", '{"channel": 0}')
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "invalid_arguments"
    garbage = run("call", "lh_get_deck", "{not json")
    assert garbage.returncode == 2 and json.loads(garbage.stdout)["error"]["field"] == ""
