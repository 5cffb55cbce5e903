"""Installing where labtools-sdk is on no package index: install hints naming where this copy
came from, the verifiers adapter saying why it is absent, and ``make wheel``."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from labtools.errors import MissingExtra, install_hint

ROOT = Path(__file__).resolve().parents[1]


def test_install_hints_name_the_clone_or_wheel_this_copy_came_from() -> None:
    records = [d.read_text("direct_url.json") for d in metadata.distributions(name="labtools-sdk")]
    record = json.loads(next(r for r in records if r))
    source = record["url"].removeprefix("file://")
    editable = "-e " if record.get("dir_info", {}).get("editable") else ""
    assert install_hint("ray") == f"pip install {editable}'{source}[ray]'"
    assert "labtools-sdk[" not in install_hint("ray")  # no index has it


def test_without_verifiers_the_adapter_says_why_and_what_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "verifiers", None)  # not installed
    monkeypatch.setitem(sys.modules, "verifiers.v1", None)
    monkeypatch.delitem(sys.modules, "labtools.session.verifiers", raising=False)
    monkeypatch.delitem(sys.modules, "labtools_verifiers", raising=False)
    with pytest.raises(MissingExtra) as absent:
        importlib.import_module("labtools_verifiers")
    assert type(absent.value).__name__ == "VerifiersUnavailable"
    assert absent.value.hint == install_hint("verifiers")
    assert str(absent.value).startswith("labtools.session.verifiers needs verifiers (")
    assert str(absent.value).endswith(f": {install_hint('verifiers')}")
    monkeypatch.delitem(sys.modules, "labtools.session.verifiers", raising=False)
    monkeypatch.setattr(metadata, "version", lambda name: "2.3.1")  # the newest mcp
    with pytest.raises(MissingExtra) as newer:
        importlib.import_module("labtools.session.verifiers")
    assert "verifiers 0.4 pins mcp==2.0.0 while this environment has mcp 2.3.1" in str(newer.value)
    monkeypatch.delitem(sys.modules, "labtools.session.verifiers", raising=False)


def test_make_wheel_builds_a_wheel_holding_the_plug_ins_and_their_data(tmp_path) -> None:
    """On a copy of the tracked files, with this environment (its pip builds the wheel)."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    clone = tmp_path / "clone"
    for name in filter(None, (t.decode() for t in tracked)):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    stamp = tmp_path / "installed"
    stamp.touch()  # newer than the copied pyproject.toml: the environment is not rebuilt
    venv = Path(sys.prefix)
    subprocess.run(
        ["make", "--no-print-directory", "wheel", f"VENV={venv}", f"STAMP={stamp}"],
        cwd=clone,
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = (clone / "dist").glob("labtools_sdk-*-py3-none-any.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("labtools", "labtools/drivers", "labtools/simulators"):
        assert f"{package}/__init__.py" in names
    assert "labtools/drivers/ocean/spectrometer.py" in names
    data = {
        p.relative_to(ROOT / "simulators").as_posix() for p in ROOT.glob("simulators/**/*.toml")
    }
    assert {f"labtools/simulators/{d}" for d in data} <= names and len(data) >= 11
    assert {"labtools/py.typed", "labtools_verifiers.py"} <= names
    assert {"labtools/view/page.html", "labtools/view/pair.html"} <= names  # the view's pages
    assert not any(n.startswith(("drivers/", "simulators/", "tests/")) for n in names)
