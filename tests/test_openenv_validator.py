"""OpenEnv's own validator against labtools' OpenEnv server on loopback: ``openenv validate
--url`` of OpenEnv 0.10 (its runtime criteria: OpenAPI version, health, metadata, schemas, the
MCP endpoint, the simulation mode's endpoints), for a task and for a family's instance.

The validator runs from an environment of its own, built once into ``build/`` by this test:
OpenEnv 0.4.2 and later need an MCP SDK older than labtools' (``mcp>=2``), so labtools' own
environment keeps OpenEnv 0.4.1 (the ``openenv`` extra) and serves with it.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from served import served

from labtools.session.openenv import app

OPENENV = "0.10.0"
PYTHON = f"py{sys.version_info[0]}{sys.version_info[1]}"
HOME = Path(__file__).resolve().parents[1] / "build" / f"openenv-{OPENENV}-{PYTHON}"
CRITERIA = {
    "openapi_version_available",
    "health_endpoint",
    "metadata_endpoint",
    "schema_endpoint",
    "mcp_endpoint",
    "mode_endpoint_consistency",
}


def _validator() -> Path:
    """``openenv`` of OpenEnv :data:`OPENENV`, in its own environment under ``build/`` (built
    once; a suite running beside this one waits on the lock and finds it built)."""
    command = HOME / "bin" / "openenv"
    HOME.parent.mkdir(parents=True, exist_ok=True)
    with open(HOME.parent / f"{HOME.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (HOME / "installed").exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(HOME)], check=True)
            done = subprocess.run(
                [
                    str(HOME / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    f"openenv=={OPENENV}",
                ],
                capture_output=True,
                text=True,
                timeout=1200,
            )
            if done.returncode != 0:
                reason = f"OpenEnv {OPENENV} could not be installed: {done.stderr[-400:]}"
                if os.environ.get("CI"):
                    pytest.fail(reason)
                pytest.skip(reason)
            (HOME / "installed").touch()
    return command


@pytest.mark.parametrize("task", ["dye_quantification", "quantify/2/tartrazine+sunset_yellow"])
def test_openenvs_validator_passes_the_running_server(task: str) -> None:
    validator = _validator()
    with served(app(task)) as url:
        done = subprocess.run(
            [str(validator), "validate", "--url", url, "--json", "--timeout", "60"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["passed"], report
    assert {c["id"] for c in report["criteria"]} == CRITERIA
    assert all(c["passed"] for c in report["criteria"])
    assert report["mode"] == "simulation"
