"""Running a snippet of Python in a fresh interpreter: what a user's own script would see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def run_python(
    code: str, *, cwd: Path | None = None, pythonpath: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -c code`` (the current directory first on ``sys.path``, as for a script)."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def python_json(code: str, **where: Any) -> Any:
    """Run ``code``, which must succeed and print one JSON value last; return that value."""
    run = run_python(code, **where)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])
