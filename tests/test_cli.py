"""The labtools command line: tools, call, eval, export, and a closed pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources

import pytest

from labtools.cli import SIGPIPE_STATUS


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


def test_eval_with_fewer_seeds_than_k_reports_what_it_can_and_exports(tmp_path) -> None:
    """pass^3 of 2 seeds is not reported (and said so), the rest is, and --export writes."""
    base = ("eval", "--task", "dye_quantification", "--agent", "expert", "--json")
    two = run(*base, "--seeds", "2", "--export", str(tmp_path))
    assert two.returncode == 0, two.stderr
    report = json.loads(two.stdout)
    assert report["seeds"] == 2 and report["k"] == 3 and report["pass_k"] is None
    assert "pass^3 not reported: it needs at least 3 seeds, and 2 ran" in two.stderr
    exported = (tmp_path / "dye_quantification.jsonl").read_text("utf-8").splitlines()
    assert len(exported) == 2
    same = json.loads(run(*base, "--seeds", "2", "--k", "2").stdout)
    assert same["mean_reward"] == report["mean_reward"]
    assert same["pass_k"] in (0.0, 1.0)  # two seeds, both must pass: all or nothing
    table = run("eval", "--task", "dye_quantification", "--seeds", "1")
    assert table.returncode == 0 and "n/a" in table.stdout
    refused = run(*base, "--seeds", "0")
    assert refused.returncode == 2
    assert refused.stderr == "labtools eval: --seeds must be 1 or more, not 0\n"


@pytest.mark.parametrize(
    "command", [("tools",), ("tools", "--names"), ("eval", "--list"), ("call", "lh_get_deck")]
)
def test_a_closed_pipe_ends_a_command_quietly(command: tuple[str, ...]) -> None:
    """``labtools tools | head``: the reader is gone before the output is written."""
    read, write = os.pipe()
    os.close(read)  # every write now fails with EPIPE, as after head has exited
    try:
        ended = subprocess.run(
            [sys.executable, "-m", "labtools", *command],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=180,
        )
    finally:
        os.close(write)
    assert ended.stderr == ""
    assert ended.returncode == SIGPIPE_STATUS == 141


def test_export_from_the_command_line_equals_the_python_export(tmp_path) -> None:
    """The same bundle from ``labtools export JOURNAL`` as from ``write_bundle`` in Python:
    every spectrometer pixel, and the lab configuration, named by the journal itself."""
    from labtools import Lab
    from labtools.journal import read_journal
    from labtools.records import Bundle, spectra, write_bundle

    journal = tmp_path / "journal.jsonl"
    with Lab.virtual(seed=5, journal=journal) as lab:
        lab.call("spec_set_integration_time", {"time": {"value": 100, "unit": "millisecond"}})
        lab.call("spec_acquire_dark", {"scans": 1}).unwrap()
        lab.call("spec_acquire_reference", {"scans": 1}).unwrap()
        inline = lab.call("spec_measure_absorbance", {"scans": 1}).unwrap()
        pixels = lab.data(inline["data"])
        python = write_bundle(lab.journal.events(), tmp_path / "python", resolve=lab.data)
    cli = run("export", str(journal), "--out", str(tmp_path / "cli"))
    assert cli.returncode == 0, cli.stderr
    exported = Bundle.open(tmp_path / "cli")
    assert exported.files == python.files and exported.hash == python.hash
    (spectrum,) = spectra(read_journal(journal))
    assert spectrum.wavelengths == pixels["wavelengths_nm"]  # every pixel, not the 72 inline
    assert len(spectrum.wavelengths) > 10 * len(inline["wavelengths"])
    jdx = (exported.path / "spectra" / "001.jdx").read_text("utf-8")
    kept = sum(y is not None for y in pixels["absorbance"])
    assert f"##NPOINTS={kept}\n" in jdx
    config = (exported.path / "virtual_lab.toml").read_text("utf-8")
    packaged = resources.files("labtools.simulators").joinpath("virtual_lab.toml")
    assert config == packaged.read_text("utf-8")
    described = json.loads((exported.path / "lab.json").read_text("utf-8"))
    assert described["config"] == "virtual_lab.toml" and described["overrides"] == {"seed": 5}


_IMPORTED = """
import contextlib, json, sys
from labtools.cli import main
with contextlib.suppress(SystemExit), contextlib.redirect_stdout(None):
    main({argv!r})
print(json.dumps([m for m in {heavy!r} if m in sys.modules]))
"""
#: modules a command imports only if it needs them: the sessions (``eval``'s parser) and the
#: simulators' plug-in commands
HEAVY = (
    "labtools.session.evaluate",
    "labtools.simulators.commands",
    "labtools.simulators.fidelity.command",
)


@pytest.mark.parametrize(
    ("argv", "imported"),
    [
        (["serve", "--help"], []),
        (["profile", "--help"], ["labtools.session.evaluate", "labtools.simulators.commands"]),
        (["--help"], list(HEAVY)),
    ],
)
def test_a_command_imports_what_it_needs(argv: list[str], imported: list[str]) -> None:
    """``labtools serve``, which an MCP host spawns and waits for, registers the built-in
    commands only up to its own and no plug-in; a plug-in's command registers the built-ins and
    loads that plug-in alone; the help lists every command, so it loads them all."""
    from fresh_process import python_json

    assert python_json(_IMPORTED.format(argv=argv, heavy=HEAVY)) == imported
