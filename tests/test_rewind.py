"""Rewinding the virtual lab: ``lab.rewind(pristine, seed=s)`` then calls B must give exactly what
a new ``Lab.virtual(s)`` gives for B — every result, the journal, the lab's state, the world's
truth, the random streams and the instruments' hidden state — whatever an earlier episode did."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from functools import partial
from typing import Any

import numpy as np
import pytest
from pylabrobot.resources import Plate

from labtools import Lab
from labtools.demo.protocol import with_tip
from labtools.journal import WALL_CLOCK_KEYS
from labtools.simulators.world import World
from labtools.simulators.world.streams import Streams
from labtools.units import qty

Call = tuple[str, dict[str, Any]]


ul = partial(qty, unit="microliter")
nm = partial(qty, unit="nanometer")


def tips(rack: str, *channels: int) -> Call:
    return ("lh_pick_up_tips", {"tip_rack": f"tips_{rack}", "channels": list(channels)})


def drop(*channels: int) -> Call:
    return ("lh_drop_tips", {"channels": list(channels)})


def aspirate(channel: int, well: str, volume: float) -> Call:
    return ("lh_aspirate", {"items": [{"channel": channel, "well": well, "volume": ul(volume)}]})


def dispense(channel: int, well: str, volume: float) -> Call:
    return ("lh_dispense", {"items": [{"channel": channel, "well": well, "volume": ul(volume)}]})


def transfer(channel: int, source: str, destination: str, volume: float) -> Call:
    return ("lh_transfer", with_tip(channel, source, destination, ul(volume)))


def mix(channel: int, well: str, volume: float, cycles: int) -> Call:
    item = {"channel": channel, "well": well, "volume": ul(volume)}
    return ("lh_mix", {"items": [item], "cycles": cycles})


def move(plate: str, destination: str) -> Call:
    return ("lh_move_plate", {"plate": plate, "destination": destination})


def absorbance(plate: str, wavelength: float, *wells: str) -> Call:
    arguments = {"plate": plate, "wavelength": nm(wavelength)}
    return ("reader_read_absorbance", {**arguments, **({"wells": list(wells)} if wells else {})})


def spectrum(plate: str, wells: list[str], start: float, stop: float, step: float) -> Call:
    arguments = {"plate": plate, "wells": wells, "start": nm(start), "stop": nm(stop)}
    return ("reader_read_absorbance_spectrum", {**arguments, "step": nm(step)})


def fluorescence(plate: str, wells: list[str], excitation: float, emission: float) -> Call:
    arguments = {"plate": plate, "wells": wells, "excitation_wavelength": nm(excitation)}
    own = {"gain": 0, "focal_height": {"value": 0, "unit": "millimeter"}}
    return ("reader_read_fluorescence", {**arguments, "emission_wavelength": nm(emission), **own})


def luminescence(plate: str, *wells: str) -> Call:
    return ("reader_read_luminescence", {"plate": plate, "wells": list(wells)})


def integration(ms: float) -> Call:
    return ("spec_set_integration_time", {"time": {"value": ms, "unit": "millisecond"}})


def spec(what: str, scans: int) -> Call:
    """``spec_acquire_dark``/``_reference``/``_spectrum`` or ``spec_measure_absorbance``."""
    return (f"spec_{what}", {"scans": scans})


#: the episode that dirties everything before each rewind: tips mounted (some holding liquid),
#: plates moved (one into the reader), wells and the cuvette filled, the spectrometer set up with
#: dark and reference, data handles taken, refused calls
DIRTY: list[Call] = [
    tips("300ul", 0, 1, 2),
    tips("1000ul", 3),
    transfer(0, "reservoir:A2", "plate_1:A1", 150),
    aspirate(1, "reservoir:A5", 120),
    dispense(1, "plate_1:B1", 70),
    mix(0, "plate_1:A1", 100, 2),
    transfer(3, "reservoir:A1", "cuvette", 1000),
    integration(80),
    spec("acquire_dark", 3),
    spec("acquire_reference", 3),
    transfer(3, "reservoir:A10", "cuvette", 300),
    spec("measure_absorbance", 2),
    move("plate_1", "reader"),
    move("plate_2", "spare_carrier-0"),
    move("plate_384", "plate_carrier-2"),
    absorbance("plate_1", 430, "A1", "B1"),
    spectrum("plate_1", ["A1"], 400, 500, 10),
    fluorescence("plate_1", ["A1"], 485, 520),
    drop(0),
    aspirate(0, "reservoir:A1", 10),  # refused: no tip
    move("plate_2", "reader"),  # refused: occupied
    aspirate(2, "reservoir:A9", 50),  # the tip keeps it
]

#: every tool, refused calls among them, starting from a pristine lab
FULL: list[Call] = [
    spec("measure_absorbance", 1),  # refused: no integration time yet
    ("lh_get_deck", {}),
    dispense(0, "plate_1:A1", 10),  # refused: no tip
    tips("300ul", 0, 1),
    tips("300ul", 1),  # refused: already has one
    tips("1000ul", 2),
    transfer(0, "reservoir:A10", "plate_1:A1", 200),
    transfer(0, "reservoir:A1", "plate_1:A2", 180),
    aspirate(1, "reservoir:A3", 150),
    dispense(1, "plate_1:B2", 100),
    dispense(1, "plate_1:B2", 100),  # refused: the tip holds 50
    dispense(1, "plate_1:B3", 50),
    mix(1, "plate_1:B2", 50, 3),
    aspirate(0, "plate_1:C1", 20),  # refused: empty well
    transfer(0, "reservoir:A9", "plate_384:A1", 40),
    transfer(2, "reservoir:A1", "cuvette", 900),
    transfer(2, "reservoir:A1", "cuvette", 100),
    integration(100),
    integration(0.0001),  # refused: out of range
    spec("acquire_dark", 4),
    spec("acquire_reference", 4),
    spec("acquire_spectrum", 1),
    transfer(2, "reservoir:A4", "cuvette", 200),
    spec("measure_absorbance", 3),
    absorbance("plate_1", 430),  # refused: not in the reader
    move("plate_1", "reader"),
    move("plate_2", "plate_carrier-1"),
    move("plate_2", "reader"),  # refused: occupied
    absorbance("plate_1", 430),
    absorbance("plate_1", 620, "A1", "B2"),
    spectrum("plate_1", ["A1", "A2", "B2"], 350, 650, 5),
    fluorescence("plate_1", ["A1", "B2", "C1"], 485, 520),
    luminescence("plate_1", "A1", "A2"),
    fluorescence("plate_1", ["A1"], 520, 485),  # refused: emission below excitation
    move("plate_1", "spare_carrier-3"),
    move("plate_384", "reader"),
    absorbance("plate_384", 490, "A1"),
    drop(0, 1),
    drop(0),  # refused: no tip
    tips("300ul", 4),
    ("lh_get_deck", {}),
]

#: the spectrometer and the reader first (their setup and streams before the handler's)
OPTICS_FIRST: list[Call] = [
    integration(50),
    spec("acquire_spectrum", 2),
    spec("acquire_reference", 1),
    spec("measure_absorbance", 1),  # refused: no dark
    luminescence("plate_2", "A1"),  # refused: not in the reader
    move("plate_2", "reader"),
    absorbance("plate_2", 500, "H12"),
    luminescence("plate_2", "A1", "H12"),
    tips("1000ul", 7),
    transfer(7, "reservoir:A6", "cuvette", 1000),
    spec("acquire_spectrum", 1),
    drop(7),
]

SEQUENCES = {"full": FULL, "optics_first": OPTICS_FIRST, "nothing": []}
DIRTY_SEED = 101


# -- running and fingerprints --------------------------------------------------------------------
def _run(lab: Lab, calls: list[Call]) -> list[str]:
    """Each result (and the data behind its handle) as exact JSON."""
    out = []
    for tool, arguments in calls:
        result = lab.call(tool, arguments)
        handle = (result.data or {}).get("data")
        behind = lab.data(handle) if isinstance(handle, str) else None
        out.append(_exact({"result": result.to_dict(), "behind": behind}))
    return out


def _exact(value: Any) -> str:
    """JSON that tells every float apart (repr round-trips), NaN included."""
    return json.dumps(_plain(value), sort_keys=False, allow_nan=True)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _journal(lab: Lab) -> list[dict[str, Any]]:
    events = lab.journal.events()
    for event in events:
        for key in WALL_CLOCK_KEYS:
            event.pop(key, None)
    return events


def _world(lab: Lab) -> World:
    return lab.shared["world"]


def _hidden_state(lab: Lab, stream_names: set[str]) -> dict[str, Any]:
    """What the agent never sees: the world's truth and streams, the instruments' insides."""
    world = _world(lab)
    lh = lab.instruments["lh"]
    backend = lh.plr.backend
    spec = lab.instruments["spec"]
    device = spec.transport.device.device  # in-process transport → session → emulator
    deck = lh.plr.deck
    return {
        "seed": world.seed,
        "clock": world.clock.now(),
        "contents": [(k, m.state()) for k, m in world._contents.items()],
        "labels": world.labels,
        "hidden": world.hidden_truth(),
        "streams": {n: world.stream(n).bit_generator.state for n in sorted(stream_names)},
        "tips": [backend.tip_contents(ch) for ch in range(backend.num_channels)],
        "racked": sorted(backend._racked),
        "channels": backend.channels,
        "film": backend.film_fraction,
        # the deck's PLR state; the head by channels with a tip (a rewound handler stays set up,
        # so its empty head exists where a new lab's has yet to be made)
        "plr": deck.serialize_all_state(),
        "head": {ch: t.serialize() for ch, t in lh.plr.head.items() if t.has_tip},
        "index": [r.name for r in deck.get_all_resources()],
        "plates": [
            (p.name, p.parent.name, p.location, (p.rotation.x, p.rotation.y, p.rotation.z))
            for p in deck.get_all_resources()
            if isinstance(p, Plate)
        ],
        "gripper": repr(lh.plr.get_picked_up_resource()),
        "device": {
            "serial": device.serial_number,
            "integration_us": device.integration_us,
            "scans": device.scans_to_average,
            "lamp": device.lamp_on,
            "shutter": device.shutter_open,
            "true_nm": device.optics.true_nm,
        },
        "driver": {
            "serial": spec.serial_number,
            "coefficients": spec.coefficients,
            "light_on": spec._light_on,
            "device_scans": spec._device_scans,
        },
        "handles": {name: inst.data.handles() for name, inst in lab.instruments.items()},
    }


def _everything(lab: Lab, results: list[str], stream_names: set[str]) -> dict[str, Any]:
    return {
        "results": results,
        "journal": _exact(_journal(lab)),
        "state": _exact(lab.state()),
        "hidden": _exact(_hidden_state(lab, stream_names)),
    }


def _assert_same(rewound: dict[str, Any], fresh: dict[str, Any]) -> None:
    for key in ("results", "journal", "state", "hidden"):
        if key == "results":
            for i, (got, want) in enumerate(zip(rewound[key], fresh[key], strict=True)):
                assert got == want, f"call {i} differs"
        else:
            assert rewound[key] == fresh[key], f"{key} differs"


def _compare(lab: Lab, seed: int, calls: list[Call]) -> None:
    """Drive the rewound ``lab`` and a new lab of ``seed`` with ``calls``; all must agree."""
    got = _run(lab, calls)
    with Lab.virtual(seed) as fresh:
        want = _run(fresh, calls)
        names = set(_world(lab).streams._streams) | set(_world(fresh).streams._streams)
        expected = _everything(fresh, want, names)
        actual = _everything(lab, got, names)
    _assert_same(actual, expected)


@pytest.fixture(scope="module")
def reused() -> Iterator[tuple[Lab, Any]]:
    """One lab for the whole module and its pristine checkpoint."""
    with Lab.virtual(DIRTY_SEED) as lab:
        yield lab, lab.checkpoint()


def _dirty(lab: Lab, pristine: Any) -> None:
    lab.rewind(pristine, seed=DIRTY_SEED)
    results = [json.loads(r)["result"] for r in _run(lab, DIRTY)]
    assert sum(r["ok"] for r in results) == len(DIRTY) - 2  # the two refusals
    assert lab.state()["reader"]["plate"] == "plate_1"


# -- tests ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sequence", list(SEQUENCES))
@pytest.mark.parametrize("seed", [3, 58, DIRTY_SEED])
def test_rewound_lab_matches_a_new_lab(reused: tuple[Lab, Any], seed: int, sequence: str) -> None:
    lab, pristine = reused
    _dirty(lab, pristine)
    lab.rewind(pristine, seed=seed)
    _compare(lab, seed, SEQUENCES[sequence])


def test_rewinding_twice_in_a_row(reused: tuple[Lab, Any]) -> None:
    lab, pristine = reused
    _dirty(lab, pristine)
    lab.rewind(pristine, seed=9)
    lab.rewind(pristine, seed=12)
    _compare(lab, 12, FULL)


def test_rewinding_without_a_seed_keeps_the_seed(reused: tuple[Lab, Any]) -> None:
    lab, pristine = reused
    _dirty(lab, pristine)
    lab.rewind(pristine)
    assert _world(lab).seed == DIRTY_SEED
    _compare(lab, DIRTY_SEED, OPTICS_FIRST)


def test_rewinding_brings_the_plate_in_the_reader_back(reused: tuple[Lab, Any]) -> None:
    lab, pristine = reused
    _dirty(lab, pristine)
    moved = {w["name"]: w["location"] for w in lab.state()["lh"]["labware"]}
    assert moved["plate_1"] == "reader" and moved["plate_2"] == "spare_carrier-0"
    lab.rewind(pristine, seed=5)
    state = lab.state()
    places = {w["name"]: w["location"] for w in state["lh"]["labware"]}
    assert places["plate_1"] == "plate_carrier-1"
    assert places["plate_2"] == "plate_carrier-2"
    assert places["plate_384"] == "plate_carrier-3"
    assert state["reader"]["plate"] is None
    assert "reader" in state["lh"]["free_sites"]
    # reconnected, as a fresh Lab.virtual(5) is: the new seed's device answers
    with Lab.virtual(seed=5) as fresh:
        assert state["spec"]["serial_number"] == fresh.state()["spec"]["serial_number"]
    assert state["clock_s"] == 0.0
    assert lab.journal.count == 0


def test_streams_restart_in_place_for_their_holders() -> None:
    world = World(4)
    held = world.stream("reader")
    held.normal(size=5)
    world.reset(8)
    assert world.stream("reader") is held
    assert held.bit_generator.state == Streams(8)("reader").bit_generator.state
    with pytest.raises(ValueError):
        world.reset(-1)
    assert world.seed == 8


def test_world_reset_rebuilds_what_the_constructor_built() -> None:
    stocks = [
        {
            "well": "r:A1",
            "species": "tartrazine",
            "concentration_uM": 100,
            "volume_ul": 1000,
            "label": "tartrazine",
        }
    ]
    unknowns = [{"well": "r:A2", "volume_ul": 500, "species": {"tartrazine": [10, 100]}}]
    world = World(1, stocks=stocks, unknowns=unknowns)
    world.contents("r:A1").take(400)
    world.fill("r:A3", world.contents("r:A2").take(100), label="mine")
    world.clock.advance(60)
    world.hidden("extra", lambda rng: rng.uniform())
    world.reset(2)
    new = World(2, stocks=stocks, unknowns=unknowns)
    assert world.labels == new.labels and world.clock.now() == 0.0
    assert world.hidden_truth() == new.hidden_truth()
    assert [(k, m.state()) for k, m in world._contents.items()] == [
        (k, m.state()) for k, m in new._contents.items()
    ]


def test_peek_reads_without_making_an_entry() -> None:
    world = World(0)
    assert world.peek("plate_1:A1").volume_ul == 0.0
    assert "plate_1:A1" not in world._contents
    world.contents("plate_1:A1")
    assert "plate_1:A1" in world._contents
