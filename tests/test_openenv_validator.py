"""OpenEnv's own validator on labtools' OpenEnv environment, OpenEnv 0.10's ``openenv validate``
in both its modes:

- ``--url`` against labtools' OpenEnv server on loopback (its runtime criteria: OpenAPI version,
  health, metadata, schemas, the MCP endpoint, the simulation mode's endpoints), for a task and
  for a family's instance; ``/metadata`` serves the manifest's name and description.
- the package mode on ``labtools/session``, whose ``openenv.yaml`` (generated from the task
  registry: :mod:`labtools.session.openenv_manifest`) it parses into its normalized manifest and
  grades against its severity policy. The manifest is schema-valid and OpenEnv reads it as
  generated; ``static.manifest`` fails on one bound, which a truthful manifest cannot meet:
  labtools' reward is not capped (an episode better than the expert's mean scores above 1, up
  to the range's maximum, 1.65), so the oracle, the expert, averages a reward well below the
  maximum, further than the policy's ``max_oracle_tolerance`` (0.1) allows. The runtime and
  semantic checks are skipped: they need a ``validation.execution`` declaration, a Docker
  image and a runtime plan, and most of their graders are not in OpenEnv 0.10.

The validator runs from an environment of its own, built once into ``build/`` by this test:
OpenEnv 0.4.2 and later need an MCP SDK older than labtools' (``mcp>=2``), so labtools' own
environment keeps OpenEnv 0.4.1 (the ``openenv`` extra) and serves with it.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from served import served

from labtools.session.openenv import app
from labtools.session.openenv_manifest import MANIFEST, identity, manifest, render

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
    (metadata,) = (c for c in report["criteria"] if c["id"] == "metadata_endpoint")
    facts = identity()
    assert metadata["actual"] == {
        "status_code": 200,
        "name": facts["name"],
        "description": facts["description"],
    }


@functools.cache
def _generated() -> dict:
    return manifest()


def test_the_manifest_is_what_the_registry_generates() -> None:
    """``labtools/session/openenv.yaml`` is up to date: ``python -m
    labtools.session.openenv_manifest`` rewrites it."""
    assert MANIFEST.read_text("utf-8") == render(_generated())


def _within(ours: object, theirs: object) -> bool:
    """Whether ``theirs`` holds ``ours``: equal, or a mapping with each of our keys' values
    (OpenEnv's normalized manifest adds the defaults of what we leave out)."""
    if isinstance(ours, dict):
        return isinstance(theirs, dict) and all(
            k in theirs and _within(v, theirs[k]) for k, v in ours.items()
        )
    return ours == theirs


def test_openenvs_validator_reads_the_manifest() -> None:
    validator = _validator()
    done = subprocess.run(
        [str(validator), "validate", str(MANIFEST.parent), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(done.stdout)
    ours = _generated()
    # schema-valid: OpenEnv's normalized manifest holds what the generator declared
    assert report["signature"] == "openenv.yaml"
    normalized = report["manifest"]
    assert normalized is not None, report["results"]
    assert normalized["name"] == ours["name"] and normalized["version"] == ours["version"]
    assert normalized["manifest_schema_version"] == "1"
    for section, declared in ours["validation"].items():
        assert _within(declared, normalized[section]), (section, normalized[section])
    results = {r["check_id"]: r for r in report["results"]}
    # static: one bound a truthful manifest cannot meet (the module's docstring)
    static = results.pop("static.manifest")
    bounds = static["measured"]["bounds"]
    declared = ours["validation"]["reward"]
    assert declared["oracle_tolerance"] > bounds["max_oracle_tolerance"]
    assert static["status"] == "fail"
    assert static["evidence"] == [
        f"declared oracle_tolerance {declared['oracle_tolerance']} exceeds the policy maximum "
        f"{bounds['max_oracle_tolerance']}"
    ]
    assert report["verdict"] == "fail" and done.returncode == 1
    # runtime and semantic: skipped, none failed (no execution declaration, no Docker image)
    assert report["levels_run"] == [1]
    assert {r["status"] for r in results.values()} == {"skip"}
    assert results["runtime.startup"]["evidence"] == [
        "missing validation.execution declaration and runtime plan"
    ]
    for declaration in ("tool", "task"):  # declared, and not yet checked by OpenEnv 0.10
        assert results[f"runtime.{declaration}_declaration_accuracy"]["evidence"] == [
            "grader not implemented in this build"
        ]
