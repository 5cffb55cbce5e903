"""The hands of the enzyme-kinetics protocols: stocks from the deck's labels, dilutions and
wells planned as transfers and pipetted in batches over all channels (``lh_transfer``),
pre-reads and kinetic reads. Tool calls only.

Wells are 200 µL; amounts are planned in µL and concentrations in M. Everything is diluted in
the assay buffer. Dilutions go into ``plate_2`` wells when they fit (340 µL) and into the
reservoir's free columns otherwise, or when all channels are to draw from them at once; each is
made with what a tip cannot draw from it on top of what is needed. A batch changes a channel's
tip whenever its source changes, so no tip carries one solution into another.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.session import Session
from labtools.simulators.tasks.scripting import caller, nm, ul

__all__ = ["Assay", "Progress", "Well", "nominal_od_per_molar"]

WELL_UL = 200.0
#: the largest dilution made in a plate well (of 360 µL), and the liquid beyond what is drawn
#: that a plate well and a reservoir column need (dead volumes ≈ 9 and 117 µL, with margin)
VESSEL_UL = 340.0
SPARE_UL = {"plate": 25.0, "reservoir": 150.0}
#: tip racks: 300 µL tips, and 1000 µL tips (10–1000 µL) for the bulk buffer
TIP_RACK, BULK_RACK, BULK_MIN_UL = "tips_300ul", "tips_1000ul", 10.0
#: p-nitrophenolate's ε at 405 nm in strong base, 1.8 × 10⁴ M⁻¹ cm⁻¹ [physics reference §8]
PNP_EPSILON_405 = 18_000.0
#: inner diameter of a Corning 96 flat well (mm) [L: Corning 3370 drawing, ~6.86 mm at the bottom]
WELL_DIAMETER_MM = 6.86
#: a kinetic read returns at most this many values inline (wells × reads), and at most this
#: many reads are taken
INLINE_VALUES, MAX_READS = 600, 41
ROWS = "ABCDEFGH"
#: wells are taken column by column, as a row of channels reaches them
_PLATE_WELLS = [f"{r}{c}" for c in range(1, 13) for r in ROWS]
_KEYS = {
    "water": "water",
    "buffer": "buffer",
    "pnpp": "pNPP",
    "pnp": "p-nitrophenol",
    "enzyme": "phosphatase",
    "inhibitor": "inhibitor",
}


def nominal_od_per_molar(volume_ul: float = WELL_UL) -> float:
    """OD per M of p-nitrophenolate in a Corning flat well holding ``volume_ul``, from the
    literature ε and the well's nominal cross-section (a first guess; standards do better)."""
    area_mm2 = math.pi * (WELL_DIAMETER_MM / 2.0) ** 2
    return PNP_EPSILON_405 * (volume_ul / area_mm2) / 10.0


@dataclass
class Well:
    """A reaction well to fill: ``parts`` (source, µL), the reaction's starter last; what it
    holds when full (M): substrate ``s``, inhibitor ``i``, enzyme ``e``."""

    well: str
    parts: list[tuple[str, float]]
    s: float = 0.0
    i: float = 0.0
    e: float = 0.0


@dataclass(frozen=True)
class Progress:
    """A kinetic read: seconds from its first read, OD series per well (NaN where saturated),
    and each well's optical baseline (OD) read before its reaction started, where taken."""

    times: np.ndarray
    series: dict[str, np.ndarray]
    baselines: dict[str, float]


class Assay:
    """One episode's bench: the labelled stocks (``self.stock[key]`` → container,
    ``self.molar[key]`` → labelled M), free wells and reservoir columns, the transfers planned
    for the next batch and the plate in the reader."""

    def __init__(self, session: Session) -> None:
        self.call = caller(session)
        deck = self.call("lh_get_deck")
        labels: dict[str, str] = deck["labels"]
        self.stock: dict[str, str] = {}
        self.molar: dict[str, float] = {}
        for key, word in _KEYS.items():
            found = [w for w, text in labels.items() if word.lower() in text.lower()]
            if found:
                self.stock[key] = found[0]
                if key not in ("water", "buffer"):
                    self.molar[key] = label_micromolar(labels[found[0]]) * 1e-6
        self.home = {lw["name"]: lw["location"] for lw in deck["labware"]}
        used = {w.partition(":")[2] for w in labels if w.startswith("reservoir:")}
        self._columns: Iterator[str] = iter(
            f"reservoir:A{c}" for c in range(12, 0, -1) if f"A{c}" not in used
        )
        self._used: dict[str, set[str]] = {"plate_1": set(), "plate_2": set()}
        self._planned: list[tuple[str, str, float]] = []
        self._in_reader: str | None = None

    # -- places --------------------------------------------------------------------------------
    def wells(self, count: int, plate: str = "plate_1") -> list[str]:
        """The first ``count`` unused wells of ``plate``, column by column."""
        used = self._used[plate]
        free = [w for w in _PLATE_WELLS if w not in used][:count]
        if len(free) < count:
            raise ValueError(f"{plate} has {len(free)} free wells, not {count}")
        used.update(free)
        return [f"{plate}:{w}" for w in free]

    def block(self, rows: int, columns: int, plate: str = "plate_1") -> list[list[str]]:
        """``rows`` × ``columns`` unused adjacent wells of ``plate``, as far left and then as
        high as they fit, row by row (a row of channels serves a column of them at once)."""
        used = self._used[plate]
        corners = [
            (c, r)
            for c in range(1, 14 - columns)
            for r in range(len(ROWS) - rows + 1)
            if not any(f"{ROWS[r + i]}{c + j}" in used for i in range(rows) for j in range(columns))
        ]
        if not corners:
            raise ValueError(f"{plate} has no free block of {rows} × {columns} wells")
        c, r = corners[0]
        grid = [[f"{ROWS[r + i]}{c + j}" for j in range(columns)] for i in range(rows)]
        used.update(w for row in grid for w in row)
        return [[f"{plate}:{w}" for w in row] for row in grid]

    @staticmethod
    def made_ul(needed_ul: float, *, trough: bool = False) -> float:
        """The volume to make so that ``needed_ul`` can be drawn from its container (a
        reservoir column with ``trough``, or when it does not fit a plate well)."""
        in_plate = needed_ul + SPARE_UL["plate"]
        if in_plate <= VESSEL_UL and not trough:
            return in_plate
        return needed_ul + SPARE_UL["reservoir"]

    def vessel(self, volume_ul: float, *, trough: bool = False) -> str:
        """A container for a solution of ``volume_ul``: a plate_2 well, or a reservoir column
        (with ``trough``, or when it is too large for a well)."""
        if volume_ul <= VESSEL_UL and not trough:
            return self.wells(1, "plate_2")[0]
        column = next(self._columns, None)
        if column is None:
            raise ValueError("the reservoir has no free column left")
        return column

    # -- liquid --------------------------------------------------------------------------------
    def plan(self, source: str, destination: str, volume_ul: float) -> None:
        """Add a transfer to the next batch (none for a volume of 0)."""
        if volume_ul > 0.0:
            self._planned.append((source, destination, volume_ul))

    def mix(self, parts: Sequence[tuple[str, float]], volume_ul: float, *, trough: bool) -> str:
        """A new container holding ``volume_ul``: ``parts`` (source, µL) made up with buffer,
        the buffer first."""
        vessel = self.vessel(volume_ul, trough=trough)
        self.plan(self.stock["buffer"], vessel, volume_ul - sum(v for _, v in parts))
        for source, volume in parts:
            self.plan(source, vessel, volume)
        return vessel

    def dilute(self, source: str, factor: float, needed_ul: float, *, trough: bool = False) -> str:
        """A new container from which ``needed_ul`` of ``source`` diluted ``factor``-fold
        (≥ 1) in buffer can be drawn (:meth:`made_ul`)."""
        volume_ul = self.made_ul(needed_ul, trough=trough)
        return self.mix([(source, volume_ul / factor)], volume_ul, trough=trough)

    def fill(self, wells: Sequence[Well], *, skip: Sequence[str] = ()) -> None:
        """Plan every part of ``wells`` whose source is not in ``skip``, source by source in
        order of first use."""
        sources = list(dict.fromkeys(src for w in wells for src, _ in w.parts))
        for source in sources:
            if source not in skip:
                for w in wells:
                    for src, volume in w.parts:
                        if src == source:
                            self.plan(src, w.well, volume)

    def pipette(self) -> None:
        """Run the planned transfers: the buffer's first, as one batch with 1000 µL tips (one
        per channel) from the smallest volume to the largest (the film a tip keeps, a fraction
        of what it last drew, then adds at most that fraction to a dispense), then the rest
        in their order as another batch, a channel's tip changed whenever its source changes;
        a plate in the reader goes home first."""
        if self._planned:
            self._plate_home()
        buffer = self.stock["buffer"]
        batches: dict[str, list[tuple[str, str, float]]] = {BULK_RACK: [], TIP_RACK: []}
        for t in self._planned:
            batches[BULK_RACK if t[0] == buffer and t[2] >= BULK_MIN_UL else TIP_RACK].append(t)
        self._planned = []
        batches[BULK_RACK].sort(key=lambda t: t[2])
        for rack, batch in batches.items():
            if batch:
                self.call(
                    "lh_transfer",
                    transfers=[
                        {"source": s, "destination": d, "volume": ul(v)} for s, d, v in batch
                    ],
                    tip_rack=rack,
                    tips="per_source",
                    channels=[],
                    mix_cycles=0,
                    mix_volume=ul(0.0),
                )

    # -- the plate reader ----------------------------------------------------------------------
    def read(self, wells: Sequence[str], *, interval_s: float, reads: int) -> Progress:
        """A kinetic read at 405 nm of ``wells`` (of one plate), the plate moved into the
        reader first if it is not there; it stays there."""
        plate = wells[0].partition(":")[0]
        if self._in_reader != plate:
            self._plate_home()
            self.call("lh_move_plate", plate=plate, destination="reader")
            self._in_reader = plate
        data = self.call(
            "reader_read_absorbance_kinetic",
            plate=plate,
            wells=[w.partition(":")[2] for w in wells],
            wavelength=nm(405),
            interval={"value": interval_s, "unit": "second"},
            reads=reads,
        )
        series = {
            f"{plate}:{w}": np.array([np.nan if x is None else x for x in v], dtype=float)
            for w, v in data["values"].items()
        }
        return Progress(np.array(data["times"], dtype=float), series, {})

    def _plate_home(self) -> None:
        if self._in_reader is not None:
            plate = self._in_reader
            self.call("lh_move_plate", plate=plate, destination=self.home[plate])
            self._in_reader = None

    def run(
        self,
        wells: Sequence[Well],
        *,
        read_s: float,
        extra: Sequence[Well] = (),
        preread: bool = False,
    ) -> Progress:
        """Pipette the planned transfers and ``wells`` but their starters (the last part),
        with the ``extra`` wells; optionally read every well's optical baseline (three reads);
        start all reactions in one batch, column by column (so that each channel keeps to one
        starter when the rows have different ones), then read ``wells`` and ``extra`` together
        for ``read_s`` seconds, as many reads as come inline (at most 41)."""
        starters = list(dict.fromkeys(w.parts[-1][0] for w in wells))
        self.fill([*wells, *extra], skip=starters)
        self.pipette()
        places = [w.well for w in [*wells, *extra]]
        baselines: dict[str, float] = {}
        if preread:
            before = self.read(places, interval_s=1.0, reads=3)
            baselines = {k: float(np.nanmean(v)) for k, v in before.series.items()}
        for w in sorted(wells, key=lambda w: _column_first(w.well)):
            starter, volume = w.parts[-1]
            self.plan(starter, w.well, volume)
        self.pipette()
        reads = min(INLINE_VALUES // len(places), MAX_READS)
        progress = self.read(places, interval_s=read_s / (reads - 1), reads=reads)
        return Progress(progress.times, progress.series, baselines)


def _column_first(well: str) -> tuple[str, int, str]:
    """A sort key for ``"<plate>:<row><column>"``: plate, column, row."""
    plate, _, name = well.partition(":")
    return plate, int(name[1:]), name[0]
