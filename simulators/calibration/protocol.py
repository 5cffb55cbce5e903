"""The calibration runs: tool calls any lab answers (real or virtual), and their readings.

Every run is made only of ``lab.call(name, arguments)`` with the tools an agent sees, and
returns a plain record (JSON-able) so real readings can be saved and fitted later
(:mod:`.fit_reader`, :mod:`.fit_pipetting`, :mod:`.fit_spectrometer`). Each record carries its
design (what was put where, by which channel and tip), the readings, and ``calls`` and
``virtual_s`` (the lab's clock, where it has one).

The runs fit the virtual deck (``simulators/deck.py``): 96-well plates ``plate_1`` and
``plate_2`` (Corning 360 µL flat), the 12-column ``reservoir`` (A1 water, A2 tartrazine
500 µM ±2 %), tip racks ``tips_10ul`` … ``tips_1000ul`` (96 each), 8 channels, the reader and
the cuvette spectrometer.

- :func:`reader_run` (plate_1): the empty plate read twice at every wavelength (each well's
  blank); columns 1-5 water at 50, 100, 150, 200, 250 µL (a path check, 977 and 900 nm), one
  well per channel; columns 6-11 a tartrazine series (5 … 150 µL of the stock made up to
  150 µL with water); column 12 stays empty (blanks read through the run); all read twice at
  977, 900 and six visible wavelengths across the dye's band, so each dye well spans a range
  of true ODs whose ratios the band shape fixes (stray light, noise) whatever the pipettes
  delivered.
- :func:`pipetting_run` (plate_2), ISO 8655-7 style (photometric): per tip type and channel, two
  test volumes, each dispensed five times in sequence into one well holding a water diluent,
  with fresh tips; the plate is read after the diluent and after every round, at the same
  wavelengths. The photometric signal is ``(1 + g) ε c`` times the dye's fraction times the
  path: the dye's concentration is known only to its label's tolerance, so relative biases
  between channels are well determined and the absolute scale carries the stock's tolerance.
  The design is a list of (channel, tip, volume, well) *deliveries*. Where the lab has a
  balance the gravimetric check (ISO 8655-6, :mod:`.gravimetric`, with the tools
  :data:`GRAVIMETRIC_TOOLS`) replaces this run and pins the absolute scale.
- :func:`spectrometer_run`: dark spectra (light blocked) at several integration times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labtools.errors import PreconditionFailed
from labtools.result import ToolResult

__all__ = [
    "DYE",
    "DYE_LEVELS_UL",
    "GRAVIMETRIC_TOOLS",
    "PATH_VOLUMES_UL",
    "PIPETTING_TESTS",
    "READ_NM",
    "VISIBLE_NM",
    "WATER",
    "CalibrationFailed",
    "Recorder",
    "pipetting_run",
    "reader_run",
    "spectrometer_run",
]

#: the reservoir columns the runs draw from (the virtual lab's labels)
WATER = "reservoir:A1"
DYE = "reservoir:A2"
#: the dye's label: concentration (µM) and its tolerance (1 sd, relative) [V: virtual_lab.toml
#: label "tartrazine 500 µM ±2 %"]
DYE_LABEL_UM = 500.0
DYE_TOLERANCE = 0.02
DYE_SPECIES = "tartrazine"
#: the path check's volumes (µL), one plate column each
PATH_VOLUMES_UL = (50.0, 100.0, 150.0, 200.0, 250.0)
#: the dye series: µL of the stock per column (made up to :data:`SERIES_TOTAL_UL` with water)
DYE_LEVELS_UL = (5.0, 10.0, 20.0, 40.0, 80.0, 150.0)
SERIES_TOTAL_UL = 150.0
#: PathCheck's water band and baseline (nm) [V: Molecular Devices PathCheck note]
PATH_NM = (977, 900)
#: across tartrazine's band (peak 426 nm) down its red flank: ε falls ~50-fold [C: species.toml]
VISIBLE_NM = (426, 460, 490, 520, 550, 580)
READ_NM = (*PATH_NM, *VISIBLE_NM)
#: reads of the plate at every wavelength, each time it is read
REPLICATE_READS = 2
#: per tip type (µL): the two test volumes (µL) and the water diluent (µL) under each;
#: :data:`ROUNDS` sequential dispenses of a test volume go into one well (≤ 360 µL) [A: the low
#: test volume near the tip's low row, the high one the largest that fits the rounds]
PIPETTING_TESTS: dict[float, tuple[tuple[float, float], ...]] = {
    10.0: ((2.0, 100.0), (10.0, 100.0)),
    50.0: ((10.0, 100.0), (50.0, 50.0)),
    300.0: ((30.0, 50.0), (60.0, 0.0)),
    1000.0: ((20.0, 100.0), (60.0, 0.0)),
}
#: deliveries per well, a fresh tip each: 5 × 2 volumes × 8 channels = 80 tips of each type,
#: which leaves the reader run its 16 tips of 300 µL and the diluent its 8 of 1000 µL
ROUNDS = 5
#: the balance tools the gravimetric (ISO 8655-6) check calls (:mod:`.gravimetric`)
GRAVIMETRIC_TOOLS = ("balance_get_info", "balance_tare", "balance_weigh")
#: dark series: integration times (ms) and scans averaged
DARK_MS = (10.0, 100.0, 1000.0, 4000.0)
DARK_SCANS = 1
#: the pixels kept of each dark (nm): ~500 pixels, under spec_get_data's 600 a call; every
#: pixel of a dark spectrum is one more draw of the same noise [A: no fixed pattern modelled]
DARK_WINDOW_NM = (300.0, 490.0)

_ROWS = "ABCDEFGH"
_CHANNELS = tuple(range(8))


class CalibrationFailed(PreconditionFailed):
    """A calibration run's tool call was refused or failed: the run stops there."""


def _ul(value: float) -> dict[str, Any]:
    return {"value": float(value), "unit": "microliter"}


def _nm(value: float) -> dict[str, Any]:
    return {"value": float(value), "unit": "nanometer"}


@dataclass
class Recorder:
    """Makes a run's tool calls, stops at the first refusal, counts calls and virtual time."""

    lab: Any
    calls: int = 0
    started: float | None = None
    tools: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.started = self._now()

    def _now(self) -> float | None:
        clock = getattr(self.lab, "clock", None)
        return None if clock is None else float(clock.now())

    def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        result: ToolResult = self.lab.call(name, dict(arguments))
        self.calls += 1
        self.tools[name] = self.tools.get(name, 0) + 1
        if not result.ok:
            error = result.error or {}
            raise CalibrationFailed(
                f"calibration call {name} failed: {error.get('message', error)}",
                hint=error.get("hint"),
            )
        return result.data

    def totals(self) -> dict[str, Any]:
        now = self._now()
        seconds = None if now is None or self.started is None else now - self.started
        return {"calls": self.calls, "tools": dict(self.tools), "virtual_s": seconds}

    # -- liquid handling, one multi-channel step at a time ---------------------------------
    def pick_up(self, rack: str, channels: Sequence[int]) -> None:
        self.call("lh_pick_up_tips", {"tip_rack": rack, "channels": list(channels)})

    def drop(self, channels: Sequence[int]) -> None:
        self.call("lh_drop_tips", {"channels": list(channels)})

    def aspirate(self, source: str, volume_ul: float, channels: Sequence[int]) -> None:
        """From one trough column, four channels at a time (PLR fits at most seven side by
        side in a reservoir column)."""
        for start in range(0, len(channels), 4):
            group = channels[start : start + 4]
            items = [{"channel": c, "well": source, "volume": _ul(volume_ul)} for c in group]
            self.call("lh_aspirate", {"items": items})

    def dispense(self, wells: Sequence[str], volume_ul: float, channels: Sequence[int]) -> None:
        items = [
            {"channel": c, "well": w, "volume": _ul(volume_ul)}
            for c, w in zip(channels, wells, strict=True)
        ]
        self.call("lh_dispense", {"items": items})

    def column_fill(
        self, source: str, plate: str, column: int, volume_ul: float, tip_ul: float
    ) -> None:
        """``volume_ul`` from ``source`` into every well of ``column`` with the tips on the
        channels (channel i into row i), in trips the tip holds."""
        trips = max(1, int(-(-volume_ul // tip_ul)))
        each = volume_ul / trips
        wells = [f"{plate}:{row}{column}" for row in _ROWS]
        for _ in range(trips):
            self.aspirate(source, each, _CHANNELS)
            self.dispense(wells, each, _CHANNELS)

    # -- reading -------------------------------------------------------------------------------
    def read_plate(self, plate: str, home: str, wavelengths: Sequence[int]) -> dict[str, Any]:
        """The plate moved into the reader, read :data:`REPLICATE_READS` times at each of
        ``wavelengths`` (whole plate), and moved back to ``home``: {nm: [ {well: OD} … ]}."""
        self.call("lh_move_plate", {"plate": plate, "destination": "reader"})
        temperature = self.call("reader_get_temperature", {})["temperature"]
        reads: dict[str, list[dict[str, float | None]]] = {}
        for nm in wavelengths:
            for _ in range(REPLICATE_READS):
                data = self.call(
                    "reader_read_absorbance", {"plate": plate, "wavelength": _nm(nm), "wells": []}
                )
                values: dict[str, float | None] = dict(data["values"])
                for well in (*data["over_range"], *data["saturated"]):
                    values[well] = None
                reads.setdefault(str(nm), []).append(values)
        self.call("lh_move_plate", {"plate": plate, "destination": home})
        return {"temperature_c": temperature, "reads": reads}


def _site_of(recorder: Recorder, plate: str) -> str:
    deck = recorder.call("lh_get_deck", {})
    for labware in deck["labware"]:
        if labware["name"] == plate:
            return str(labware["location"])
    raise CalibrationFailed(f"the deck has no plate {plate!r}", hint="see lh_get_deck")


def reader_run(lab: Any, plate: str = "plate_1") -> dict[str, Any]:
    """Path check, dye series and blanks on ``plate`` (see the module docstring)."""
    rec = Recorder(lab)
    home = _site_of(rec, plate)
    empty = rec.read_plate(plate, home, READ_NM)
    wells: dict[str, dict[str, Any]] = {}
    # water first with one set of 300 µL tips (water into water: reuse is harmless)
    rec.pick_up("tips_300ul", _CHANNELS)
    for column, volume in enumerate(PATH_VOLUMES_UL, start=1):
        rec.column_fill(WATER, plate, column, volume, 300.0)
        for ch, row in enumerate(_ROWS):
            wells[f"{row}{column}"] = {"kind": "water", "water_ul": volume, "channel": ch}
    for column, dye in enumerate(DYE_LEVELS_UL, start=6):
        if dye < SERIES_TOTAL_UL:
            rec.column_fill(WATER, plate, column, SERIES_TOTAL_UL - dye, 300.0)
    for ch, row in enumerate(_ROWS):
        wells[f"{row}12"] = {"kind": "empty", "channel": ch}
    rec.drop(_CHANNELS)
    # the dye with one set of 300 µL tips, level after level: a tip reused with the same
    # liquid delivers as a fresh one (its film stays on its wall), and the amounts are fitted
    rec.pick_up("tips_300ul", _CHANNELS)
    for column, dye in enumerate(DYE_LEVELS_UL, start=6):
        rec.column_fill(DYE, plate, column, dye, 300.0)
        for ch, row in enumerate(_ROWS):
            wells[f"{row}{column}"] = {
                "kind": "dye",
                "water_ul": SERIES_TOTAL_UL - dye,
                "dye_ul": dye,
                "dye_tip_ul": 300.0,
                "channel": ch,
            }
    rec.drop(_CHANNELS)
    filled = rec.read_plate(plate, home, READ_NM)
    return {
        "run": "reader",
        "plate": plate,
        "labware": "cor_96_wellplate_360uL_Fb",
        "dye": {"species": DYE_SPECIES, "label_uM": DYE_LABEL_UM, "tolerance": DYE_TOLERANCE},
        "water_tip_ul": 300.0,
        "wells": wells,
        "empty": empty,
        "filled": filled,
        **rec.totals(),
    }


def pipetting_deliveries() -> list[dict[str, Any]]:
    """The photometric run's design: per tip type, test volume and channel, one well of
    plate_2 (column by column, channel i in row i) and its diluent."""
    out = []
    column = 1
    for tip, tests in PIPETTING_TESTS.items():
        for volume, diluent in tests:
            for ch, row in enumerate(_ROWS):
                out.append(
                    {
                        "channel": ch,
                        "tip_ul": tip,
                        "volume_ul": volume,
                        "diluent_ul": diluent,
                        "well": f"{row}{column}",
                        "column": column,
                    }
                )
            column += 1
    return out


def pipetting_run(lab: Any, plate: str = "plate_2") -> dict[str, Any]:
    """Photometric volume checks per channel and tip type on ``plate`` (module docstring)."""
    rec = Recorder(lab)
    home = _site_of(rec, plate)
    design = pipetting_deliveries()
    columns = sorted(
        {d["column"]: (d["tip_ul"], d["volume_ul"], d["diluent_ul"]) for d in design}.items()
    )
    rec.pick_up("tips_1000ul", _CHANNELS)  # the diluent, one set of tips
    for column, (_, _, diluent) in columns:
        if diluent > 0:
            rec.column_fill(WATER, plate, column, diluent, 1000.0)
    rec.drop(_CHANNELS)
    rounds = [rec.read_plate(plate, home, VISIBLE_NM)]
    for _ in range(ROUNDS):
        for column, (tip, volume, _) in columns:
            rec.pick_up(f"tips_{tip:g}ul", _CHANNELS)
            wells = [f"{plate}:{row}{column}" for row in _ROWS]
            rec.aspirate(DYE, volume, _CHANNELS)
            rec.dispense(wells, volume, _CHANNELS)
            rec.drop(_CHANNELS)
        rounds.append(rec.read_plate(plate, home, VISIBLE_NM))
    return {
        "run": "pipetting",
        "method": "photometric",
        "plate": plate,
        "labware": "cor_96_wellplate_360uL_Fb",
        "dye": {"species": DYE_SPECIES, "label_uM": DYE_LABEL_UM, "tolerance": DYE_TOLERANCE},
        "deliveries": design,
        "rounds": rounds,
        **rec.totals(),
    }


def spectrometer_run(lab: Any) -> dict[str, Any]:
    """Dark spectra at :data:`DARK_MS` integration times: each pixel's counts."""
    rec = Recorder(lab)
    darks = []
    for ms in DARK_MS:
        rec.call("spec_set_integration_time", {"time": {"value": ms, "unit": "millisecond"}})
        data = rec.call("spec_acquire_dark", {"scans": DARK_SCANS})
        full = rec.call(
            "spec_get_data",
            {"data": data["data"], "start": _nm(DARK_WINDOW_NM[0]), "stop": _nm(DARK_WINDOW_NM[1])},
        )
        darks.append(
            {
                "integration_ms": ms,
                "scans": DARK_SCANS,
                "full_scale": data["full_scale"],
                "counts": [float(c) for c in full["values"]],
            }
        )
    model = lab.state()["spec"]["model"]  # what the instrument reports of itself
    return {"run": "spectrometer", "model": model, "darks": darks, **rec.totals()}
