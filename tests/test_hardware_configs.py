"""The hardware guides' example configurations (docs/examples/*.toml) load offline, name the
backend and connection arguments the guides say, and run where a dry run exists: the OT-2 on
PyLabRobot's chatterbox with Opentrons labware from opentrons-shared-data, a bench plate reader
on PLR's chatterbox reader, and the Ocean OBP configs against the project's emulator over TCP."""

from __future__ import annotations

import logging
import re
import sys
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labtools import Lab
from labtools.config import ConfigError
from labtools.drivers.pylabrobot import opentrons_labware as otl
from labtools.instrument import Instrument
from labtools.simulators.spectrometer import OBPEmulator, OBPSocketServer
from labtools.simulators.world import Mixture, World

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
GUIDES = Path(__file__).parent.parent / "docs" / "hardware"
FAMILIES = ("hamilton-star.md", "opentrons-ot2.md", "plate-readers.md", "ocean.md")
#: PyLabRobot's level for wire traffic (pylabrobot.io.LOG_LEVEL_IO)
IO = 5


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to download (PLR's Opentrons labware loader uses urllib) fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a download was attempted: {args[:1]}")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


@pytest.fixture
def plr_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """PyLabRobot's records down to its IO level (its logger does not propagate to the root)."""
    logger = logging.getLogger("pylabrobot")
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(IO, logger="pylabrobot"):
            yield caplog
    finally:
        logger.removeHandler(caplog.handler)


def _with_table(path: Path, table: str, key: str, value: dict[str, Any], tmp: Path) -> Path:
    """A copy of the example ``path`` with ``[table] key`` replaced by the inline table
    ``value`` (flat: strings, numbers and booleans)."""

    def toml(v: object) -> str:
        return str(v).lower() if isinstance(v, bool) else repr(v).replace("'", '"')

    inline = "{ " + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + " }"
    lines, inside, done = [], False, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            inside = line.strip() == f"[{table}]"
        if inside and line.startswith(f"{key} ="):
            line, done = f"{key} = {inline}", True
        lines.append(line)
    assert done, f"{path.name} has no [{table}] {key}"
    out = tmp / path.name
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


# -- every example -----------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_every_example_loads_offline(path: Path, offline: None) -> None:
    """Each example builds its instruments without connecting and exports its tools."""
    with Lab.load(path) as lab:
        assert lab.instruments
        assert all(isinstance(i, Instrument) for i in lab.instruments.values())
        assert lab.tools("mcp")
        assert all(not i.link_lost for i in lab.instruments.values())


def test_the_guides_cover_every_example() -> None:
    """One page per family; the index names every example; each page's TOML snippets parse."""
    index = (GUIDES / "README.md").read_text(encoding="utf-8")
    assert all((GUIDES / page).is_file() and f"({page})" in index for page in FAMILIES)
    assert [p.name for p in EXAMPLES.glob("*.toml") if p.name not in index] == []
    for page in FAMILIES:
        text = (GUIDES / page).read_text(encoding="utf-8")
        for block in re.findall(r"```toml\n(.*?)```", text, flags=re.S):
            tomllib.loads(block)


# -- Hamilton STAR -----------------------------------------------------------------------------
def test_plr_verbose_at_io_level_prints_the_star_firmware_strings(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The switch the guide names: ``pylabrobot.verbose(True, level=LOG_LEVEL_IO)``."""
    import pylabrobot
    from pylabrobot.io import LOG_LEVEL_IO

    logger = logging.getLogger("pylabrobot")
    level = logger.level
    pylabrobot.verbose(True, level=LOG_LEVEL_IO)
    try:
        with Lab.load(EXAMPLES / "star_dry_run.toml") as lab:
            lab.lh.pick_up_tips("tips_300ul", [0])
    finally:
        pylabrobot.verbose(False)
        logger.setLevel(level)
    err = capfd.readouterr().err
    assert LOG_LEVEL_IO == IO
    assert "pylabrobot - IO - C0TP" in err  # PLR names level 5 "IO"


def test_star_hardware_backend_loads_without_connecting(tmp_path: Path) -> None:
    """The STAR example with the hardware backend in place of the chatterbox: it builds, names
    its USB serial number, and opens nothing until setup."""
    backend = {
        "class": "pylabrobot.liquid_handling.backends:STARBackend",
        "serial_number": "STAR0042",
    }
    path = _with_table(
        EXAMPLES / "star_dry_run.toml", "instruments.lh", "backend", backend, tmp_path
    )
    with Lab.load(path) as lab:
        lh = lab.instruments["lh"]
        assert type(lh.plr.backend).__name__ == "STARBackend"
        assert not lh.simulated and not lh.plr.setup_finished
        assert lh.plr.backend.io._serial_number == "STAR0042"  # PLR's USB wrapper
        assert lh.limits.channels == 8


# -- Opentrons OT-2 ----------------------------------------------------------------------------
def test_ot2_dry_run_moves_liquid_offline(offline: None, plr_log: pytest.LogCaptureFixture) -> None:
    """Each mount in turn picks up, aspirates, dispenses and drops through labtools' PLR adapter
    on the OT-2 chatterbox; every HTTP API call it would make is logged at PLR's IO level."""
    with Lab.load(EXAMPLES / "ot2_dry_run.toml") as lab:
        assert lab.instruments["lh"].simulated
        for channel, rack, volume, well in [
            (0, "tips_300ul", "100 uL", "plate_1:A1"),
            (1, "tips_20ul", "10 uL", "plate_1:B1"),
        ]:
            lab.lh.pick_up_tips(rack, [channel])
            lab.lh.aspirate([{"channel": channel, "well": "reservoir:A1", "volume": volume}])
            lab.lh.dispense([{"channel": channel, "well": well, "volume": volume}])
            lab.lh.drop_tips([channel])
        deck = lab.lh.get_deck()
        wrong_tip = lab.call("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [1]})
    calls = [r.getMessage() for r in plr_log.records if r.levelno == IO]
    picks = [c for c in calls if c.startswith("lh.pick_up_tip(")]
    assert "chatterbox-left" in picks[0] and "chatterbox-right" in picks[1]
    assert any(c.startswith("lh.aspirate_in_place(volume=100.0") for c in calls)
    assert any(
        c.startswith("lh.dispense_in_place(volume=10.0") and "chatterbox-right" in c for c in calls
    )
    assert sum(c.startswith("lh.drop_tip_in_place(") for c in calls) == 2
    wells = {lw["name"]: lw["wells"] for lw in deck["labware"] if "wells" in lw}
    assert wells["reservoir"]["A1"] == 14890.0
    assert wells["plate_1"]["A1"] == 100.0 and wells["plate_1"]["B1"] == 10.0
    assert deck["labels"]["reservoir:A1"] == "water"
    assert not wrong_tip.ok  # a P20 takes no 300 µL tip


def test_ot2_backend_moves_one_channel_per_call(offline: None) -> None:
    """PLR 0.2.2's OT-2 backend takes one channel per call: two are refused, typed, and the
    tips stay where they were."""
    with Lab.load(EXAMPLES / "ot2_dry_run.toml") as lab:
        lab.lh.pick_up_tips("tips_300ul", [0])
        lab.lh.pick_up_tips("tips_20ul", [1])
        refused = lab.call("lh_drop_tips", {"channels": [0, 1]})
        mounted = [c["tip"] for c in lab.lh.get_deck()["channels"]]
    assert not refused.ok and "one channel" in refused.error["message"]
    assert mounted == ["tips_300ul:A1", "tips_20ul:A1"]


@pytest.mark.parametrize(
    "load_name",
    [
        "opentrons_96_tiprack_300ul",
        "opentrons_96_tiprack_20ul",
        "opentrons_96_tiprack_10ul",
        "opentrons_96_tiprack_1000ul",
        "opentrons_96_filtertiprack_200ul",
    ],
)
def test_tip_racks_equal_plrs_own_conversion(
    load_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PLR's Opentrons rack factory, fed the same definition instead of downloading it, builds
    the same resource tree (spots, their places and sizes, the tips)."""
    import pylabrobot.resources.opentrons as ot
    from pylabrobot.resources.opentrons import load

    monkeypatch.setattr(
        load,
        "_download_ot_resource_file",
        lambda ot_name, force_download: otl.load_definition(ot_name),
    )
    plrs = getattr(ot, load_name)("tips")
    ours = otl.tip_rack("tips", load_name)
    assert ours.serialize() == plrs.serialize()
    assert (
        ours.get_item("A1").get_tip().maximal_volume == plrs.get_item("A1").get_tip().maximal_volume
    )


def _deck_config(slots: str, tmp: Path, extra: str = "") -> Path:
    path = tmp / "ot2.toml"
    path.write_text(
        f"""
[shared.deck]
class = "labtools.drivers.pylabrobot.opentrons_labware:ot2_deck"
{extra}
[shared.deck.slots]
{slots}

[instruments.lh]
class = "labtools.drivers.pylabrobot.liquid_handler:PLRLiquidHandler"
deck = "@deck"
channels = 2
[instruments.lh.backend]
class = "pylabrobot.liquid_handling.backends:OpentronsOT2ChatterboxBackend"
verbose = false
""",
        encoding="utf-8",
    )
    return path


_TIPS = 'class = "labtools.drivers.pylabrobot.opentrons_labware:tip_rack", name = "tips"'
_PLATE = 'class = "pylabrobot.resources:cor_96_wellplate_360uL_Fb", name = "plate_1"'


@pytest.mark.parametrize(
    ("slots", "extra", "where", "says"),
    [
        (
            f'1 = {{ {_TIPS}, definition = "opentrons_96_tiprack_300" }}',
            "",
            "slots.1.definition",
            "did you mean opentrons_96_tiprack_300ul",
        ),
        (
            f'1 = {{ {_TIPS}, definition = "corning_96_wellplate_360ul_flat" }}',
            "",
            "slots.1.definition",
            "not a tip rack; plates and reservoirs are PLR resources",
        ),
        (
            f'1 = {{ {_TIPS}, definition = "opentrons_96_tiprack_300ul", version = 2 }}',
            "",
            "slots.1.version",
            "has no version 2; versions: 1",
        ),
        (f"12 = {{ {_PLATE} }}", "", "slots.12", "slot 12 holds the fixed trash"),
        (f"13 = {{ {_PLATE} }}", "", "slots.13", "slots are 1–12"),
        ('1 = "plate"', "", "slots.1", "needs a PyLabRobot resource"),
        (f"1 = {{ {_PLATE} }}\n2 = {{ {_PLATE} }}", "", "slots.2", "plate_1"),
    ],
)
def test_ot2_deck_mistakes_name_the_setting(
    slots: str, extra: str, where: str, says: str, tmp_path: Path, offline: None
) -> None:
    with pytest.raises(ConfigError) as caught:
        Lab.load(_deck_config(slots, tmp_path, extra))
    assert f"[shared.deck] {where}:" in str(caught.value)
    assert says in str(caught.value)


def test_slot_12_takes_labware_without_the_trash(tmp_path: Path) -> None:
    path = _deck_config(f"12 = {{ {_PLATE} }}", tmp_path, "with_trash = false")
    with Lab.load(path) as lab:
        assert "plate_1" in {lw["name"] for lw in lab.lh.get_deck()["labware"]}


def test_without_opentrons_shared_data_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "opentrons_shared_data.load", None)
    path = _deck_config(f'1 = {{ {_TIPS}, definition = "opentrons_96_tiprack_300ul" }}', tmp_path)
    with pytest.raises(ConfigError, match=r"slots\.1\.definition: .*pip install"):
        Lab.load(path)


# -- plate readers -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "backend", "connection"),
    [
        ("clariostar.toml", "CLARIOstarBackend", {"device_id": "BMG12345"}),
        ("cytation.toml", "CytationBackend", {"device_id": "FT123456", "timeout": 20}),
        ("spectramax.toml", "MolecularDevicesSpectraMaxM5Backend", {"port": "/dev/ttyUSB0"}),
    ],
)
def test_reader_configs_name_backend_and_connection(
    name: str, backend: str, connection: dict[str, Any]
) -> None:
    """The reader is built, not connected: the backend class and its connection arguments."""
    with Lab.load(EXAMPLES / name) as lab:
        built = lab.instruments["reader"].reader.backend
        assert type(built).__name__ == backend
        assert not lab.instruments["reader"].reader.setup_finished  # loading does not connect
        held = lab.instruments["reader"].state()
    assert held == {"plate": "plate_1", "backend": backend}
    io = built.io
    seen = {
        "device_id": getattr(io, "_device_id", None),  # PLR's FTDI wrapper
        "port": getattr(io, "_port", None),  # PLR's Serial wrapper
        "timeout": getattr(built, "timeout", None),
    }
    assert {k: seen[k] for k in connection} == connection


def test_spectramax_384_plus_takes_the_same_port(tmp_path: Path) -> None:
    backend = {
        "class": "pylabrobot.plate_reading:MolecularDevicesSpectraMax384PlusBackend",
        "port": "COM3",
    }
    path = _with_table(
        EXAMPLES / "spectramax.toml", "shared.spectramax", "backend", backend, tmp_path
    )
    with Lab.load(path) as lab:
        built = lab.instruments["reader"].reader.backend
    assert type(built).__name__ == "MolecularDevicesSpectraMax384PlusBackend"
    assert built.port == "COM3"


def test_bench_reader_reads_on_plrs_chatterbox(tmp_path: Path) -> None:
    """The CLARIOstar example with PLR's chatterbox reader in place of the hardware."""
    backend = {"class": "pylabrobot.plate_reading:PlateReaderChatterboxBackend"}
    path = _with_table(
        EXAMPLES / "clariostar.toml", "shared.clariostar", "backend", backend, tmp_path
    )
    with Lab.load(path) as lab:
        assert lab.instruments["reader"].simulated
        reading = lab.reader.read_absorbance("plate_1", "450 nm", ["A1", "H12"])
        missing = lab.call(
            "reader_read_absorbance",
            {
                "plate": "plate_2",
                "wavelength": {"value": 450, "unit": "nanometer"},
                "wells": ["A1"],
            },
        )
    assert reading["values"] == {"A1": 0.0, "H12": 0.0}
    assert not missing.ok and missing.error["code"] == "unknown_resource"


def test_bench_reader_refuses_a_plate_that_is_not_one(tmp_path: Path) -> None:
    plate = {
        "class": "labtools.drivers.pylabrobot.opentrons_labware:tip_rack",
        "name": "tips",
        "definition": "opentrons_96_tiprack_300ul",
    }
    path = _with_table(EXAMPLES / "clariostar.toml", "shared.clariostar", "plate", plate, tmp_path)
    with pytest.raises(ConfigError, match=r"\[shared.clariostar\] plate: needs a PyLabRobot Plate"):
        Lab.load(path)


# -- Ocean over OBP ----------------------------------------------------------------------------
@pytest.fixture
def sts() -> Iterator[OBPSocketServer]:
    world = World(seed=3)
    world.fill("cuvette", Mixture.solution(3000, {}))
    with OBPSocketServer(OBPEmulator(world, "STS")) as server:
        yield server


@pytest.mark.parametrize("form", ["socket", "visa"])
def test_ocean_tcp_config_talks_to_the_emulator(
    sts: OBPSocketServer, form: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The TCP example with its address pointed at the emulator: it identifies the device, and
    the OBP frames are logged by labtools.transport at DEBUG."""
    address = sts.url if form == "socket" else sts.visa_resource
    with (
        caplog.at_level(logging.DEBUG, logger="labtools.transport"),
        Lab.load(EXAMPLES / "ocean_tcp.toml", address=address) as lab,
    ):
        assert lab.instruments["spec"].link is None  # not connected by loading
        lab.spec.set_integration_time("20 ms")
        spectrum = lab.spec.acquire_spectrum(1)
        serial = lab.instruments["spec"].serial_number
    assert serial == sts.emulator.serial_number
    assert spectrum["scans"] == 1 and spectrum["max_counts"] > 0
    frames = [r.getMessage() for r in caplog.records if r.name == "labtools.transport"]
    assert any(" >> " in f for f in frames) and any(" << " in f for f in frames)


def test_ocean_serial_config_passes_its_options_to_pyserial(sts: OBPSocketServer) -> None:
    """The serial example's mapping (``uri`` plus pyserial options) opened on a pyserial URL."""
    raw = tomllib.loads((EXAMPLES / "ocean_serial.toml").read_text(encoding="utf-8"))
    assert raw["instruments"]["spec"]["transport"] == {"uri": "@port", "baudrate": 9600}
    with Lab.load(EXAMPLES / "ocean_serial.toml", port=sts.url) as lab:
        lab.connect()
        transport = lab.instruments["spec"].transport
        assert transport is not None and transport.port.baudrate == 9600
        assert lab.instruments["spec"].serial_number == sts.emulator.serial_number
