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


def test_log_level_io_shows_the_firmware_strings_on_stderr_and_keeps_stdout_json() -> None:
    star = "docs/examples/star_dry_run.toml"
    tips = '{"tip_rack": "tips_300ul", "channels": [0]}'
    wired = run("--log-level", "io", "call", "--lab", star, "lh_pick_up_tips", tips)
    assert wired.returncode == 0 and json.loads(wired.stdout)["ok"] is True
    assert "C0TP" in wired.stderr  # PyLabRobot's STAR firmware string, at its IO level
    quiet = run("call", "--lab", star, "lh_pick_up_tips", tips)
    assert quiet.returncode == 0 and "C0TP" not in quiet.stderr + quiet.stdout
    info = run("--log-level", "info", "call", "--lab", star, "lh_pick_up_tips", tips)
    assert "C0TP" not in info.stderr  # IO records sit below INFO


def test_a_bad_lab_file_is_one_stderr_line_and_exit_code_2_for_every_command(tmp_path) -> None:
    """8 channels asked of a 4-channel backend: refused as the file is read, by each command."""
    from importlib import resources

    text = (resources.files("labtools.simulators") / "virtual_lab.toml").read_text("utf-8")
    bad = tmp_path / "bad.toml"
    bad.write_text(
        text.replace('world = "@world" }', 'world = "@world", num_channels = 4 }\nchannels = 8')
    )
    expected = (
        f"labtools: {bad}: [instruments.lh] channels: 8 channels, but the backend "
        "(PhysicsLiquidHandlerBackend) has 4"
    )
    for command in (
        ("tools", "--lab", str(bad)),
        ("call", "--lab", str(bad), "lh_get_deck", "{}"),
        ("serve", "--lab", str(bad)),
    ):
        result = run(*command)
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.splitlines() == [expected], command
        assert result.stdout == ""
    syntax = tmp_path / "syntax.toml"
    syntax.write_text("seed = \n")
    result = run("tools", "--lab", str(syntax))
    assert result.returncode == 2
    assert (
        result.stderr
        == f"labtools: {syntax}: TOML syntax error: Invalid value (at line 1, column 8)\n"
    )
