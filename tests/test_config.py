"""Lab configuration files: classes by import path, shared objects, references, overrides."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest

from labtools import Lab
from labtools.config import (
    ConfigError,
    build_config,
    import_object,
    load_config,
    shadowing_modules,
)


def test_the_fake_lab_loads_from_toml_with_an_instrument_reference(tmp_path) -> None:
    from mcp_helpers import FAKE_LAB

    with Lab.load(FAKE_LAB) as lab:
        assert lab.tool_names()[0] == "lh_pick_up_tips"
        assert lab.instruments["reader"].lh is lab.instruments["lh"]


def test_overrides_replace_top_level_values_only() -> None:
    raw = {"seed": 0, "instruments": {"spec": {"class": "fakes:FakeSpectrometer"}}}
    assert build_config(raw, seed=3).instruments["spec"].name == "spec"
    with pytest.raises(ConfigError, match="no top-level setting"):
        build_config(raw, speed=3)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "names no instruments"),
        ({"instruments": {"x": {"nope": 1}}}, "needs a 'class'"),
        ({"instruments": {"x": {"class": "no_such_module:Thing"}}}, "cannot import"),
        ({"instruments": {"x": {"class": "fakes:NoSuchClass"}}}, "has no 'NoSuchClass'"),
        ({"instruments": {"x": {"class": "fakes"}}}, "is not 'module:name'"),
        (
            {"instruments": {"x": {"class": "fakes:FakeSpectrometer", "colour": 1}}},
            r"^\[instruments.x\] colour: FakeSpectrometer takes no 'colour'; it takes no settings$",
        ),
        (
            {"instruments": {"x": {"class": "fakes:FakeSpectrometer", "name": "y"}}},
            r"^\[instruments.x\] name: an instrument is named by its table \('x'\)",
        ),
        (
            {"instrument": {"x": {"class": "fakes:FakeSpectrometer"}}},
            r"^unknown table \[instrument\]; a configuration has top-level values",
        ),
        (
            {"seed": 0, "shared": {"seed": {}}, "instruments": {}},
            r"^\[shared.seed\] 'seed' is defined twice",
        ),
        (
            {"clock": 3, "instruments": {"x": {"class": "fakes:FakeSpectrometer"}}},
            r"^clock: names an object, e.g. '@world.clock', not 3$",
        ),
        (
            {"instruments": {"x": {"class": "types:SimpleNamespace"}}},
            r"^\[instruments.x\] class: its class builds a SimpleNamespace, not a labtools "
            r"Instrument$",
        ),
        (
            {"instruments": {"x": {"class": "labtools.lab:Lab"}}},
            r"^\[instruments.x\] name: Lab takes no 'name', which every instrument is built "
            r"with; it takes: instruments, journal, clock, shared, confirm$",
        ),
        (
            {"instruments": {"x": {"class": "fakes:FakePlateReader", "lh": "@later"}}},
            "names nothing defined before it",
        ),
    ],
)
def test_configuration_errors_say_what_is_wrong(raw: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(raw)


def test_the_virtual_lab_config_builds_a_world_shared_by_all_instruments() -> None:
    from importlib import resources

    with resources.as_file(resources.files("labtools.simulators") / "virtual_lab.toml") as path:
        config = load_config(path, seed=4)
    world = config.shared["world"]
    assert world.seed == 4 and config.clock is world.clock
    assert set(config.instruments) == {"lh", "reader", "spec", "balance"}
    assert import_object("labtools.lab:Lab") is Lab


# -- mistakes found when the file is read, before anything connects ----------------------------

#: a STARlet and a plate reader on PyLabRobot's dry-run backends (docs/examples/star_dry_run.toml)
STAR_LAB = """\
[shared.reader_backend]
class = "pylabrobot.plate_reading:PlateReaderChatterboxBackend"

[shared.deck]
class = "labtools.simulators.deck:build_deck"
reader_backend = "@reader_backend"

[instruments.reader]
class = "labtools.drivers.pylabrobot.plate_reader:PLRPlateReader.on_deck"
deck = "@deck"

[instruments.lh]
class = "labtools.drivers.pylabrobot.liquid_handler:PLRLiquidHandler"
deck = "@deck"
channels = 8
labels = { "reservoir:A1" = "water" }
volumes = { "reservoir:A1" = 15000 }

[instruments.lh.backend]
class = "pylabrobot.liquid_handling.backends.hamilton.STAR_chatterbox:STARChatterboxBackend"
"""


@pytest.fixture
def setups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the instruments whose ``setup()`` ran, PLR drivers and test fakes alike."""
    from fakes import FakeSpectrometer

    from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
    from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader

    called: list[str] = []

    async def record(self) -> None:
        called.append(self.name)

    for cls in (PLRLiquidHandler, PLRPlateReader, FakeSpectrometer):
        monkeypatch.setattr(cls, "setup", record)
    return called


def _write(tmp_path, text: str, name: str = "my_lab.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_star_lab_of_these_reproducers_loads_and_sets_up(tmp_path, setups) -> None:
    """The control: unchanged, the file loads, and connecting sets both instruments up."""
    with Lab.load(_write(tmp_path, STAR_LAB)) as lab:
        assert setups == []
        lab.connect()
        assert sorted(setups) == ["lh", "reader"]
        reservoir = next(w for w in lab.lh.get_deck()["labware"] if w["name"] == "reservoir")
        assert reservoir["wells"] == {"A1": 15000.0}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            '"reservoir:A1" = 15000',
            '"reservoir:A1" = 99999',
            '[instruments.lh] volumes."reservoir:A1": 99999 µL exceeds the well\'s capacity of '
            "15676.1 µL",
        ),
        (
            '"reservoir:A1" = 15000',
            '"reservoir:A1" = -5',
            '[instruments.lh] volumes."reservoir:A1": -5 µL is not a volume (0 µL or more)',
        ),
        (
            'volumes = { "reservoir:A1"',
            'volumes = { "plate_1:A13"',
            "[instruments.lh] volumes.\"plate_1:A13\": 'plate_1' has no well 'A13'; "
            "wells of plate_1: A1–H12 (96)",
        ),
        (
            'labels = { "reservoir:A1"',
            'labels = { "reservoir:Z2"',
            "[instruments.lh] labels.\"reservoir:Z2\": 'reservoir' has no well 'Z2'; "
            "wells of reservoir: A1–A12 (12)",
        ),
        (
            'labels = { "reservoir:A1"',
            'labels = { "shelf"',
            "[instruments.lh] labels.shelf: no labware named 'shelf'; labware: reservoir, "
            "plate_1, plate_2, plate_384, cuvette",
        ),
        (
            "channels = 8",
            "channels = 16",
            "[instruments.lh] channels: 16 channels, but the backend (STARChatterboxBackend) has 8",
        ),
        (
            "channels = 8",
            'channels = 8\ncolour = "red"',
            "[instruments.lh] colour: PLRLiquidHandler takes no 'colour'; it takes: deck, "
            "backend, channels, labels, volumes, tip_types",
        ),
        (
            'STARChatterboxBackend"',
            'STARChatterboxBackend"\nnum_chanels = 8',
            "[instruments.lh] backend.num_chanels: STARChatterboxBackend takes no "
            "'num_chanels'; did you mean 'num_channels'? it takes: num_channels,",
        ),
        (
            'reader_backend = "@reader_backend"',
            'reader_backend = "@reader_backend"\nrails = 3',
            "[shared.deck] rails: build_deck takes no 'rails'; it takes: reader_backend",
        ),
        (
            'deck = "@deck"\n\n[instruments.lh]',
            'deck = "@deck"\nreader = "plate_1"\n\n[instruments.lh]',
            "[instruments.reader] reader: the deck has a Plate, not a reader, named 'plate_1'; "
            "plate readers on it: reader",
        ),
        (
            'deck = "@deck"\nchannels',
            'deck = "@deck.deck"\nchannels',
            "[instruments.lh] deck: '@deck.deck': a HamiltonSTARDeck has no 'deck'",
        ),
        (
            'deck = "@deck"\nchannels',
            'deck = "@reader_backend"\nchannels',
            "[instruments.lh] deck: needs a PyLabRobot Deck, not a PlateReaderChatterboxBackend",
        ),
        (
            "channels = 8",
            "channels = 8\ntip_types = { tip_300ul = [300, 1] }",
            "[instruments.lh] tip_types.tip_300ul: give [min, max] µL with 0 < min <= max, "
            "not [300,1]",
        ),
        (
            'class = "labtools.simulators.deck:build_deck"',
            'class = "labtools.simulators.deck:build_dek"',
            "[shared.deck] class: 'labtools.simulators.deck' has no 'build_dek'",
        ),
    ],
)
def test_each_mistake_is_a_config_error_naming_file_table_and_key(
    tmp_path, setups, old: str, new: str, expected: str
) -> None:
    assert old in STAR_LAB
    path = _write(tmp_path, STAR_LAB.replace(old, new, 1))
    with pytest.raises(ConfigError) as caught:
        Lab.load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {expected}"), message
    assert "\n" not in message
    assert caught.value.source == str(path)
    assert setups == []  # nothing was set up


def test_a_refused_setting_changes_no_tracker(tmp_path) -> None:
    """All initial volumes are checked before any is set: the first good one is not applied."""
    from pylabrobot.liquid_handling.backends import LiquidHandlerChatterboxBackend

    from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
    from labtools.simulators.deck import build_deck

    deck = build_deck()
    with pytest.raises(ConfigError, match=r'^volumes\."plate_1:A1": 400 µL exceeds'):
        PLRLiquidHandler(
            "lh",
            deck,
            LiquidHandlerChatterboxBackend(),
            volumes={"reservoir:A1": 1000, "plate_1:A1": 400},
        )
    assert deck.get_resource("reservoir").get_well("A1").tracker.get_used_volume() == 0.0


def test_toml_syntax_errors_name_the_file_and_line(tmp_path, setups) -> None:
    path = _write(tmp_path, STAR_LAB.replace("channels = 8", "channels = "))
    with pytest.raises(ConfigError) as caught:
        Lab.load(path)
    assert str(caught.value) == f"{path}: TOML syntax error: Invalid value (at line 15, column 12)"
    missing = tmp_path / "nowhere.toml"
    with pytest.raises(ConfigError, match=r"nowhere\.toml: cannot read it: No such file"):
        load_config(missing)
    assert setups == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            'volume_ul = 15000, label = "water"',
            'volume_ul = 99999, label = "water"',
            "[shared.deck] world: the world's stock reservoir:A1: 99999 µL exceeds the "
            "container's capacity of 15676.1 µL",
        ),
        (
            '{ well = "reservoir:A11"',
            '{ well = "reservoir:Z2"',
            "[shared.deck] world: the world's stock 'reservoir:Z2' is not on the virtual deck: "
            "'reservoir' has no well 'Z2'",
        ),
        (
            'class = "labtools.simulators.plate_reading:PhysicsPlateReaderBackend"\n',
            'class = "labtools.simulators.plate_reading:PhysicsPlateReaderBackend"\nsize = 3\n',
            "[shared.reader_backend] size: PhysicsPlateReaderBackend takes no 'size'; it takes: "
            "world, stream, path_model, constants",
        ),
        (
            'world = "@world" }',
            'world = "@world", num_channels = 0 }',
            "[instruments.lh] backend.num_channels: must be a positive integer, not 0",
        ),
        ('clock = "@world.clock"', 'clock = "@world"', "clock: World is not a clock"),
    ],
)
def test_the_virtual_lab_s_own_mistakes_are_config_errors(
    tmp_path, setups, old: str, new: str, expected: str
) -> None:
    from importlib import resources

    text = (resources.files("labtools.simulators") / "virtual_lab.toml").read_text("utf-8")
    assert old in text
    path = _write(tmp_path, text.replace(old, new, 1), "virtual.toml")
    with pytest.raises(ConfigError) as caught:
        Lab.load(path)
    assert str(caught.value).startswith(f"{path}: {expected}"), str(caught.value)
    assert setups == []


def test_a_packaged_configuration_still_loads() -> None:
    from labtools.config import packaged

    config = load_config(packaged("labtools.simulators:virtual_lab.toml"), seed=2)
    assert config.shared["world"].seed == 2
    with pytest.raises(ConfigError, match=r"virtual_lab\.toml: no top-level setting \['sed'\]"):
        load_config(packaged("labtools.simulators:virtual_lab.toml"), sed=2)


def test_instruments_the_lab_cannot_hold_are_config_errors_naming_the_file(tmp_path) -> None:
    path = tmp_path / "clash.toml"
    path.write_text('[instruments.tools]\nclass = "fakes:FakeSpectrometer"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        Lab.load(path)
    assert str(caught.value).startswith(f"{path}: an instrument may not be named 'tools'")


@pytest.mark.parametrize(
    ("factory", "said"),
    [
        ("needs_an_extra", "RuntimeError this backend needs pylibftdi"),
        ("downloads_a_definition", "OSError <urlopen error"),
    ],
)
def test_a_constructor_that_fails_outright_is_a_config_error_naming_its_table(
    tmp_path, factory: str, said: str
) -> None:
    path = _write(tmp_path, f'[shared.backend]\nclass = "fakes:{factory}"\n')
    with pytest.raises(ConfigError) as caught:
        Lab.load(path)
    assert "[shared.backend]" in str(caught.value) and said in str(caught.value)


def test_a_user_file_shadowing_an_installed_module_is_named_with_the_real_cause(
    tmp_path,
) -> None:
    """A script named serial.py that loads a lab: PyLabRobot's ``import serial`` imports the
    script again, mid-import; the error names the file and keeps the real cause."""
    script = tmp_path / "serial.py"
    script.write_text("from labtools import Lab\n\nLab.virtual(seed=0)\n", encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=180, cwd=tmp_path
    )
    assert ran.returncode == 1
    last = ran.stderr.strip().splitlines()[-1]
    installed = importlib.util.find_spec("serial")
    assert installed is not None and installed.origin is not None
    assert last.startswith("labtools.config.ConfigError: ")
    assert "(it is only partly imported: an import cycle)" in last
    assert f"{script} shadows the installed module 'serial' ({installed.origin})" in last
    assert "The above exception was the direct cause" in ran.stderr  # the chain is kept
    assert "AttributeError" in ran.stderr or "ImportError" in ran.stderr


def test_a_module_from_a_user_folder_hiding_an_installed_one_is_found(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``import_object`` of a class the shadowing module lacks: the file is named."""
    (tmp_path / "serial.py").write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "serial", raising=False)
    importlib.invalidate_caches()
    assert import_object("serial:VALUE") == 1
    with pytest.raises(ConfigError) as missing:
        import_object("serial:Serial")
    assert str(missing.value).startswith("'serial' has no 'Serial'; ")
    assert f"{tmp_path / 'serial.py'} shadows the installed module 'serial'" in str(missing.value)
    assert isinstance(missing.value.__cause__, AttributeError)
    assert [s for s in shadowing_modules() if "'serial'" in s] != []
    monkeypatch.delitem(sys.modules, "serial")
    assert [s for s in shadowing_modules() if "'serial'" in s] == []
