"""Tasks are found through the ``labtools.tasks`` entry-point group, or by ``module:Class``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from fresh_process import python_json, run_python

import labtools.simulators.tasks as builtin
from labtools.session import Session, Task, load_task, task_ids
from labtools.session.registry import UnknownTask, task_class


def _builtin_task_classes() -> dict[str, type[Task]]:
    found: dict[str, type[Task]] = {}
    for info in pkgutil.iter_modules(builtin.__path__, builtin.__name__ + "."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, Task)
                and not inspect.isabstract(cls)
                and cls.__module__ == info.name
            ):
                found[cls.id] = cls
    return found


def test_every_builtin_task_is_registered_under_its_id() -> None:
    classes = _builtin_task_classes()
    assert task_ids() == sorted(classes)
    assert len(classes) == 8
    for task_id, cls in classes.items():
        assert task_class(task_id) is cls


def test_a_module_class_reference_names_a_task_directly() -> None:
    task = load_task("labtools.simulators.tasks.standard_curve:StandardCurve")
    assert task.id == "standard_curve"


@pytest.mark.parametrize(
    ("reference", "words"),
    [
        ("no_such_task", "unknown task 'no_such_task'; tasks: colour_matching"),
        ("labtools.units:Range", "is not a labtools Task class"),
        ("labtools.nowhere:Task", "cannot import 'labtools.nowhere'"),
        ("x" * 10_000, "unknown task 'xxxx"),
    ],
)
def test_unknown_references_are_refused_with_what_exists(reference: str, words: str) -> None:
    with pytest.raises(UnknownTask) as caught:
        load_task(reference)
    assert words in str(caught.value)
    assert len(str(caught.value)) < 400


ANOTHER_PACKAGE = """
from labtools.simulators.tasks.standard_curve import StandardCurve


class Titration(StandardCurve):
    id = "titration"
    title = "A task another package adds"
"""


def _install_another_package(site: Path, name: str = "titration") -> None:
    """A distribution on ``site`` that registers one task, as ``pip install`` would leave it."""
    (site / "lab_extras").mkdir()
    (site / "lab_extras" / "__init__.py").write_text(ANOTHER_PACKAGE, encoding="utf-8")
    info = site / "lab_extras-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: lab-extras\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[labtools.tasks]\n{name} = lab_extras:Titration\n", encoding="utf-8"
    )


def test_another_package_adds_a_task_through_its_entry_point(tmp_path: Path) -> None:
    _install_another_package(tmp_path)
    code = (
        "import json\n"
        "from labtools.session import Session, task_ids\n"
        "session = Session('titration')\n"
        "observation = session.reset(seed=2)\n"
        "print(json.dumps({'ids': task_ids(), 'task': session.state()['task'],"
        " 'tools': observation['tools']}))\n"
    )
    out = python_json(code, pythonpath=tmp_path)
    assert "titration" in out["ids"] and "standard_curve" in out["ids"]
    assert out["task"] == "titration" and "submit_standard_curve" in out["tools"]


def test_an_entry_point_whose_class_has_another_id_is_refused(tmp_path: Path) -> None:
    _install_another_package(tmp_path, name="misnamed")
    code = "from labtools.session import load_task\nload_task('misnamed')\n"
    run = run_python(code, pythonpath=tmp_path)
    assert run.returncode == 1
    assert "entry point 'misnamed' loads a task whose id is 'titration'" in run.stderr


def test_a_session_takes_a_task_by_reference() -> None:
    with Session("labtools.simulators.tasks.dye_quantification:DyeQuantification") as session:
        assert session.reset(seed=0)["tools"][-1] == "submit_dye_quantification"
