"""labtools' ASM documents validated against the Allotrope schemas that the allotropy wheel
ships (``allotropy/allotrope/schemas/{adm,qudt}/…/*.schema.json``, each with its ``$id``; the
``$ref``s between them resolved through a ``referencing`` registry of the wheel's files).

The wheel is downloaded once with pip into ``build/allotropy/`` (allotropy is no dependency: it
pins jsonschema below 4.18). Where it cannot be had the tests skip, and fail under ``CI=true``."""

from __future__ import annotations

import copy
import gzip
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from labtools import Lab
from labtools.records import plate_reader_asm, read_asm, spectrophotometry_asm
from labtools.records.asm import PLATE_READER_MANIFEST, SPECTROPHOTOMETRY_MANIFEST
from tests.reading_run import every_reading, has_handle

ROOT = Path(__file__).resolve().parents[1]
#: the allotropy release whose schemas the tests hold labtools to
ALLOTROPY = "0.1.150"
CACHE = ROOT / "build" / "allotropy"
SCHEMAS = "allotropy/allotrope/schemas/"
REAL = Path(__file__).parent / "data" / "real"
REPLAY = Path(__file__).parent / "data" / "replay"
NM = "nanometer"


def _wheel() -> Path:
    found = sorted(CACHE.glob(f"allotropy-{ALLOTROPY}-*.whl"))
    if found:
        return found[0]
    CACHE.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", f"allotropy=={ALLOTROPY}"]
    # into a directory of its own, then renamed into the cache: a suite running beside this one
    # (CI runs two Pythons at once) sees the whole wheel or none
    with tempfile.TemporaryDirectory(dir=CACHE) as fresh:
        done = subprocess.run(
            [*command, "--no-deps", "--disable-pip-version-check", "-d", fresh],
            capture_output=True,
            text=True,
            timeout=600,
        )
        for wheel in Path(fresh).glob(f"allotropy-{ALLOTROPY}-*.whl"):
            os.replace(wheel, CACHE / wheel.name)
    found = sorted(CACHE.glob(f"allotropy-{ALLOTROPY}-*.whl"))
    if done.returncode != 0 or not found:
        reason = f"the allotropy {ALLOTROPY} wheel could not be downloaded: {done.stderr[-400:]}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found[0]


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    """Every ASM schema in the wheel, by its ``$id``."""
    with zipfile.ZipFile(_wheel()) as wheel:
        names = [n for n in wheel.namelist() if n.startswith(SCHEMAS)]
        found = [json.loads(wheel.read(n)) for n in names if n.endswith(".schema.json")]
    return {schema["$id"]: schema for schema in found}


@pytest.fixture(scope="module")
def registry(schemas: dict[str, Any]) -> Registry:
    resources = [
        (uri, Resource.from_contents(schema, default_specification=DRAFT202012))
        for uri, schema in schemas.items()
    ]
    return Registry().with_resources(resources)


def _schema_id(manifest: str) -> str:
    """A manifest's schema: ``…/manifests/X.manifest`` → ``…/json-schemas/adm/X.schema``."""
    tail = manifest.split("/manifests/", 1)[1].removesuffix(".manifest")
    return f"http://purl.allotrope.org/json-schemas/adm/{tail}.schema"


def _errors(document: dict[str, Any], schemas: dict[str, Any], registry: Registry) -> list[str]:
    schema = schemas[_schema_id(document["$asm.manifest"])]
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(document)]


def _qty(value: float, unit: str) -> dict[str, Any]:
    return {"value": value, "unit": unit}


@pytest.fixture(scope="module")
def run() -> list[dict[str, Any]]:
    """A virtual run with every kind of reading labtools has, whole (payloads kept)."""
    with Lab.virtual(seed=4) as lab:
        events, whole = every_reading(lab)
    return [e | {"payload": whole[e["data"]["data"]]} if has_handle(e) else e for e in events]


def test_the_wheel_holds_the_schemas_labtools_writes_to(schemas: dict[str, Any]) -> None:
    for manifest in (PLATE_READER_MANIFEST, SPECTROPHOTOMETRY_MANIFEST):
        assert _schema_id(manifest) in schemas
    assert len(schemas) > 100  # every technique and version, with core and qudt units


def test_every_kind_of_reading_written_validates(run, schemas, registry) -> None:
    plate = plate_reader_asm(run)
    spectro = spectrophotometry_asm(run)
    assert plate is not None and spectro is not None
    assert _errors(plate, schemas, registry) == []
    assert _errors(spectro, schemas, registry) == []
    documents = plate["plate reader aggregate document"]["plate reader document"]
    assert len(documents) == 5  # absorbance, spectrum, kinetic, fluorescence, luminescence
    items = [
        i for d in documents for i in d["measurement aggregate document"]["measurement document"]
    ]
    kinds = {k for i in items for k in i if k.endswith("cube") or k in _RESULTS}
    assert kinds == _RESULTS | {"absorption spectrum data cube", "absorption profile data cube"}


_RESULTS = {"absorbance", "fluorescence", "luminescence"}


#: recorded runs of the tasks (tests/data/replay): endpoint, kinetic and spectrometer reads
RECORDED = [
    REPLAY / f"{t}.jsonl.gz" for t in ("standard_curve", "enzyme_kinetics", "virtual_lab_demo")
]


@pytest.mark.parametrize("path", [p for p in RECORDED if p.exists()], ids=lambda p: p.name)
def test_recorded_runs_written_as_asm_validate(path, schemas, registry) -> None:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        events = [json.loads(line) for line in lines]
    written = [d for d in (plate_reader_asm(events), spectrophotometry_asm(events)) if d]
    assert written
    for document in written:
        assert _errors(document, schemas, registry) == []


def test_the_validator_refuses_what_the_schema_forbids(run, schemas, registry) -> None:
    """The check bites: a plate without its measurement time, a container the vocabulary does
    not have, a measurement without its identifier and an instrument without its model are
    refused. (Not a wrong absorbance unit: a measurement need only match one of the schema's
    detector alternatives, and those that have no absorbance field pass it.)"""
    plate = plate_reader_asm(run)
    assert plate is not None
    wrong = copy.deepcopy(plate)
    aggregate = wrong["plate reader aggregate document"]
    group = aggregate["plate reader document"][0]["measurement aggregate document"]
    del group["measurement time"]
    group["container type"] = "bucket"
    del group["measurement document"][0]["measurement identifier"]
    del aggregate["device system document"]["model number"]
    found = " | ".join(_errors(wrong, schemas, registry))
    for text in ("'measurement time' is a required", "'bucket' is not one of"):
        assert text in found
    for text in ("'measurement identifier' is a required", "'model number' is a required"):
        assert text in found


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.iterdir() if p.is_dir()))
def test_the_real_datasets_are_valid_asm(name, schemas, registry) -> None:
    (path,) = (REAL / name).glob("*.json")
    document = json.loads(path.read_text("utf-8"))
    assert _errors(document, schemas, registry) == []
    assert read_asm(document).measurements or read_asm(document).series


@pytest.mark.parametrize("ci", ["", "true"])
def test_a_wheel_that_cannot_be_had_skips_and_fails_under_ci(ci, tmp_path, monkeypatch) -> None:
    import test_asm_schemas as here

    def refused(command: list[str], **_: Any) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution")

    monkeypatch.setattr(here, "CACHE", tmp_path)
    monkeypatch.setattr(here.subprocess, "run", refused)
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(expected, match="No matching distribution"):
        here._wheel()
