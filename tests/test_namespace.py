"""One namespace: labtools.drivers and labtools.simulators, whatever the user's directory holds.

Lab code often has packages of its own named ``drivers`` or ``simulators``; run from such a
directory (the current directory comes first on ``sys.path``), labtools must not pick them up.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from fresh_process import python_json
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from labtools.config import packaged
from labtools.lab import VIRTUAL_LAB

TRAP = 'raise ImportError("the user\'s own {name} package was imported")\n'


def _user_directory(tmp_path: Path) -> Path:
    """A directory holding the user's own ``drivers`` and ``simulators`` packages."""
    for name in ("drivers", "simulators"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(TRAP.format(name=name), encoding="utf-8")
        (tmp_path / name / "pylabrobot.py").write_text(TRAP.format(name=name), encoding="utf-8")
    with packaged(VIRTUAL_LAB).open("rb") as source:
        (tmp_path / "my_lab.toml").write_bytes(source.read())
    return tmp_path


def test_virtual_lab_and_config_load_beside_the_users_own_packages(tmp_path: Path) -> None:
    cwd = _user_directory(tmp_path)
    code = (
        "import json, sys\n"
        "from labtools import Lab\n"
        "virtual = Lab.virtual(seed=1)\n"
        "loaded = Lab.load('my_lab.toml', seed=1)\n"
        "ok = loaded.call('lh_pick_up_tips', {'tip_rack': 'tips_300ul', 'channels': [0]}).ok\n"
        "print(json.dumps({'tools': virtual.tool_names(), 'loaded': loaded.tool_names(),\n"
        "    'ok': ok, 'first': sys.path[0],\n"
        "    'drivers': sys.modules['labtools.drivers'].__file__}))\n"
    )
    out = python_json(code, cwd=cwd)
    assert out["first"] == "", "the user's directory was not first on sys.path"
    assert len(out["tools"]) == 27 and out["loaded"] == out["tools"] and out["ok"] is True
    assert Path(out["drivers"]).parent != cwd / "drivers"


def test_labtools_serve_beside_the_users_own_packages(tmp_path: Path) -> None:
    cwd = _user_directory(tmp_path)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "labtools", "serve", "--lab", "my_lab.toml"], cwd=cwd
    )

    async def main() -> None:
        async with Client(stdio_client(params)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert len(names) == 27 and "spec_measure_absorbance" in names
            result = await client.call_tool("lh_get_deck", {})
            assert not result.is_error

    anyio.run(main)


def test_nothing_installs_a_top_level_drivers_or_simulators(tmp_path: Path) -> None:
    code = (
        "import importlib.util, json\n"
        "print(json.dumps([importlib.util.find_spec(n) is None"
        " for n in ('drivers', 'simulators')]))\n"
    )
    assert python_json(code, cwd=tmp_path) == [True, True]


def test_the_package_list_names_every_folder_with_code() -> None:
    """pyproject.toml lists packages explicitly (package-dir maps folders); none is missed."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = project["tool"]["setuptools"]
    folders = {name: root / path for name, path in setuptools["package-dir"].items()}
    found = set()
    for name, folder in folders.items():
        for init in folder.rglob("__init__.py"):
            relative = init.parent.relative_to(folder).parts
            found.add(".".join((name, *relative)))
    assert sorted(setuptools["packages"]) == sorted(found)
