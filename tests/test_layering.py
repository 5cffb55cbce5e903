"""The layering contracts of pyproject.toml, checked by import-linter on the installed layout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from installed_layout import ROOT, link_tree

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_contracts_hold(tmp_path: Path) -> None:
    run = _lint(link_tree(tmp_path / "src"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 2 kept, 0 broken." in run.stdout


def test_a_core_module_importing_a_simulator_breaks_the_contract(tmp_path: Path) -> None:
    # the same repository, but labtools/config.py imports the simulators' tasks
    leaky = tmp_path / "config.py"
    source = (ROOT / "labtools" / "config.py").read_text(encoding="utf-8")
    leaky.write_text(source + "\nimport labtools.simulators.tasks  # noqa\n", encoding="utf-8")
    run = _lint(link_tree(tmp_path / "src", replace={"config.py": leaky}))
    assert run.returncode == 1
    assert "labtools.config -> labtools.simulators.tasks" in run.stdout


def test_a_new_core_module_must_take_a_layer(tmp_path: Path) -> None:
    stray = tmp_path / "stray.py"
    stray.write_text('"""A module no layer names."""\n', encoding="utf-8")
    run = _lint(link_tree(tmp_path / "src", replace={"stray.py": stray}))
    assert run.returncode == 1
    assert "labtools.stray" in run.stdout
