"""The hands of the enzyme-kinetics protocols: stocks from the deck's labels, dilutions, wells
filled source by source with one tip each, pre-reads and kinetic reads. Tool calls only.

Wells are 200 µL; amounts are planned in µL and concentrations in M. Dilutions go into
``plate_2`` wells when they fit (340 µL) and into the reservoir's free columns otherwise, each
made with what a tip cannot draw from it on top of what is needed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.session import Session
from labtools.simulators.tasks.scripting import caller, nm, ul, with_tip

__all__ = ["Assay", "Well", "nominal_od_per_molar"]

WELL_UL = 200.0
#: the largest dilution made in a plate well (of 360 µL), and the liquid beyond what is drawn
#: that a plate well and a reservoir column need (dead volumes ≈ 9 and 117 µL, with margin)
VESSEL_UL = 340.0
SPARE_UL = {"plate": 25.0, "reservoir": 150.0}
#: the largest volume a tip of each rack takes (µL)
TIP_UL = {"tips_300ul": 300.0, "tips_1000ul": 1000.0}
#: p-nitrophenolate's ε at 405 nm in strong base, 1.8 × 10⁴ M⁻¹ cm⁻¹ [physics reference §8]
PNP_EPSILON_405 = 18_000.0
#: inner diameter of a Corning 96 flat well (mm) [L: Corning 3370 drawing, ~6.86 mm at the bottom]
WELL_DIAMETER_MM = 6.86
_PLATE_WELLS = [f"{r}{c}" for r in "ABCDEFGH" for c in range(1, 13)]
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
    """A reaction well to fill: ``parts`` (source, µL) in order, the enzyme's last; what it
    holds when full (M): substrate ``s``, inhibitor ``i``, enzyme ``e``."""

    well: str
    parts: list[tuple[str, float]]
    s: float = 0.0
    i: float = 0.0
    e: float = 0.0


class Assay:
    """One episode's bench: the labelled stocks (``self.stock[key]`` → container,
    ``self.molar[key]`` → labelled M), free wells and free reservoir columns."""

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
        self._wells = {p: iter(_PLATE_WELLS) for p in ("plate_1", "plate_2")}

    # -- places --------------------------------------------------------------------------------
    def wells(self, count: int, plate: str = "plate_1") -> list[str]:
        """The next ``count`` unused wells of ``plate``."""
        return [f"{plate}:{next(self._wells[plate])}" for _ in range(count)]

    @staticmethod
    def made_ul(needed_ul: float) -> float:
        """The volume to make so that ``needed_ul`` can be drawn from its container."""
        in_plate = needed_ul + SPARE_UL["plate"]
        return in_plate if in_plate <= VESSEL_UL else needed_ul + SPARE_UL["reservoir"]

    def vessel(self, volume_ul: float) -> str:
        """A container for a solution of ``volume_ul``: a plate_2 well or a reservoir column."""
        return self.wells(1, "plate_2")[0] if volume_ul <= VESSEL_UL else next(self._columns)

    # -- liquid --------------------------------------------------------------------------------
    def distribute(self, source: str, plan: list[tuple[str, float]]) -> None:
        """``plan`` (destination, µL) from ``source``, in order, with one fresh tip: a 300 µL
        tip, or a 1000 µL tip (in as many equal strokes as needed) when a volume is larger."""
        plan = [(d, v) for d, v in plan if v > 0.0]
        if not plan:
            return
        large = max(v for _, v in plan) > TIP_UL["tips_300ul"]
        rack = "tips_1000ul" if large else "tips_300ul"
        self.call("lh_pick_up_tips", tip_rack=rack, channels=[0])
        for destination, volume in plan:
            strokes = math.ceil(volume / TIP_UL[rack])
            for _ in range(strokes):
                self.call("lh_transfer", **with_tip(0, source, destination, ul(volume / strokes)))
        self.call("lh_drop_tips", channels=[0])

    def dilute(self, source: str, factor: float, needed_ul: float, diluent: str) -> str:
        """A new container from which ``needed_ul`` of ``source`` diluted ``factor``-fold
        (≥ 1) in ``diluent`` can be drawn (:meth:`made_ul`); the diluent goes in first."""
        volume_ul = self.made_ul(needed_ul)
        vessel = self.vessel(volume_ul)
        part = volume_ul / factor
        self.distribute(self.stock[diluent], [(vessel, volume_ul - part)])
        self.distribute(source, [(vessel, part)])
        return vessel

    def fill(self, wells: list[Well], order: list[str]) -> None:
        """Every part of ``wells`` whose source is not the enzyme's, source by source in
        ``order`` first (sources not listed after), one tip per source."""
        sources = list(dict.fromkeys(src for w in wells for src, _ in w.parts))
        sources = [s for s in order if s in sources] + [s for s in sources if s not in order]
        for source in sources:
            self.distribute(source, [(w.well, v) for w in wells for s, v in w.parts if s == source])

    # -- the plate reader ----------------------------------------------------------------------
    def read(
        self,
        wells: list[str],
        *,
        interval_s: float,
        reads: int,
        plate: str = "plate_1",
        home: bool = True,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """A kinetic read at 405 nm with the plate in the reader, then the plate goes ``home``
        (or stays): (seconds from the first read, OD per well with NaN where saturated)."""
        self.call("lh_move_plate", plate=plate, destination="reader")
        data = self.call(
            "reader_read_absorbance_kinetic",
            plate=plate,
            wells=[w.partition(":")[2] for w in wells],
            wavelength=nm(405),
            interval={"value": interval_s, "unit": "second"},
            reads=reads,
        )
        if home:
            self.call("lh_move_plate", plate=plate, destination=self.home[plate])
        times = np.array(data["times"], dtype=float)
        values = {
            f"{plate}:{w}": np.array([np.nan if x is None else x for x in v], dtype=float)
            for w, v in data["values"].items()
        }
        return times, values

    def run(
        self,
        wells: list[Well],
        enzymes: Sequence[str],
        *,
        order: list[str],
        interval_s: float,
        reads: int,
        extra: Sequence[str] = (),
        preread: bool = False,
        last: bool = False,
    ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, float]]:
        """Fill ``wells`` with everything but the ``enzymes`` (sources in ``order`` first),
        optionally read each one's optical baseline (three reads), start the reactions by
        adding the enzymes (one tip each), then read the wells and ``extra`` wells
        kinetically; the plate stays in the reader after the ``last`` read. Returns times, OD
        series and baselines."""
        self.fill([_without(w, enzymes) for w in wells], order)
        baselines: dict[str, float] = {}
        if preread:
            _, before = self.read([w.well for w in wells], interval_s=1.0, reads=3)
            baselines = {k: float(np.nanmean(v)) for k, v in before.items()}
        for enzyme in enzymes:
            self.distribute(enzyme, [(w.well, v) for w in wells for s, v in w.parts if s == enzyme])
        times, series = self.read(
            [w.well for w in wells] + list(extra),
            interval_s=interval_s,
            reads=reads,
            home=not last,
        )
        return times, series, baselines


def _without(well: Well, sources: Sequence[str]) -> Well:
    parts = [(s, v) for s, v in well.parts if s not in sources]
    return Well(well.well, parts, well.s, well.i, well.e)
