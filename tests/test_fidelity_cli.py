"""``labtools fidelity`` from the command line: a report in JSON and a plot, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtools.cli import main


def test_fidelity_of_the_published_twin_on_the_virtual_lab(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plot = tmp_path / "fidelity.png"
    argv = ["fidelity", "--twin", "published", "--seed", "31", "--replicates", "2"]
    assert main([*argv, "--no-tasks", "--json", "--plot", str(plot)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["replicates"] == 2
    overall = report["overall"]
    assert overall["readings"] > 500
    assert set(overall["coverage"]) == {"50", "90", "95"}
    assert 0.0 <= overall["coverage"]["50"] <= overall["coverage"]["95"] <= 1.0
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--lab", "my_lab.toml", "--profile", "x.toml"], "--lab virtual"),
        (["--profile", "no_such_profile.toml"], "cannot read profile"),
        (["--twin", "no_such_twin.toml"], "cannot read profile"),
    ],
)
def test_fidelity_refuses_what_it_cannot_use(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    twin = [] if "--twin" in argv else ["--twin", "published"]
    assert main(["fidelity", *twin, *argv, "--no-tasks"]) == 2
    assert words in capsys.readouterr().err
