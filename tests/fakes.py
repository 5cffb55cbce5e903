"""Small test-only instruments: enough behaviour to exercise the tool core, no physics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from labtools.errors import Interlock, OutOfRange, PreconditionFailed, UnknownResource
from labtools.instruments import (
    LiquidHandler,
    LiquidHandlerLimits,
    PlateReader,
    PlateReaderLimits,
    Spectrometer,
    SpectrometerLimits,
    TipType,
)
from labtools.units import Range, magnitude, qty

UL = "microliter"
WELLS = [f"{r}{c}" for r in "ABCDEFGH" for c in range(1, 13)]


class FakeLiquidHandler(LiquidHandler):
    """Two channels, one plate and a tip rack; volumes in µL, checked before anything moves."""

    limits = LiquidHandlerLimits(channels=2, tip_types=(TipType("tip_200ul", Range(1, 200, UL)),))

    def __init__(self, name: str = "lh") -> None:
        super().__init__(name)
        self.wells: dict[str, float] = {f"plate_1:{w}": 0.0 for w in WELLS}
        self.wells["stock:A1"] = 5000.0
        self.tips_left = 96
        self.tip: dict[int, float | None] = {0: None, 1: None}
        self.plate_location = "site_1"

    def _well(self, ref: str, field: str) -> str:
        if ref not in self.wells:
            raise UnknownResource(f"no well {ref!r}", field=field, hint="e.g. 'plate_1:A1'")
        return ref

    def _tip(self, channel: int, field: str = "/channel") -> float:
        held = self.tip[channel]
        if held is None:
            raise PreconditionFailed(
                f"channel {channel} has no tip", field=field, hint="call lh_pick_up_tips first"
            )
        return held

    async def pick_up_tips(self, tip_rack: str, channels: Sequence[int]) -> Any:
        if tip_rack != "tips":
            raise UnknownResource(f"no tip rack {tip_rack!r}", field="/tip_rack", hint="'tips'")
        for i, ch in enumerate(channels):
            if self.tip[ch] is not None:
                raise PreconditionFailed(f"channel {ch} already has a tip", field=f"/channels/{i}")
        if len(channels) > self.tips_left:
            raise Interlock("not enough tips", hint=f"{self.tips_left} left")
        for ch in channels:
            self.tip[ch] = 0.0
        self.tips_left -= len(channels)
        return {
            "tips": [{"channel": ch, "tip": "tips", "tip_type": "tip_200ul"} for ch in channels],
            "tips_left": self.tips_left,
        }

    async def drop_tips(self, channels: Sequence[int]) -> Any:
        for ch in channels:
            self._tip(ch)
        for ch in channels:
            self.tip[ch] = None
        return {"channels": list(channels)}

    def _move(self, items: Sequence[Any], sign: int) -> list[tuple[int, str, float]]:
        """Dry-run ``items`` on copies (``sign`` -1 draws into the tips, +1 expels), then apply."""
        wells, tips = dict(self.wells), dict(self.tip)
        done = []
        for i, item in enumerate(items):
            ch, at = item["channel"], f"/items/{i}"
            if ch not in tips:
                raise OutOfRange(f"no channel {ch}", field=f"{at}/channel", hint="0 or 1")
            ref = self._well(item["well"], f"{at}/well")
            held = tips[ch]
            if held is None:
                raise PreconditionFailed(f"channel {ch} has no tip", field=f"{at}/channel")
            ul = magnitude(item["volume"], UL)
            if not self.limits.volume.contains(ul):
                raise OutOfRange(
                    f"{ul:g} µL is outside the tip's range",
                    field=f"{at}/volume",
                    hint=f"allowed: {self.limits.volume.describe(str(item['volume'].units))}",
                )
            if sign < 0 and ul > wells[ref]:
                raise Interlock(
                    f"{ref} holds {wells[ref]:g} µL",
                    field=f"{at}/volume",
                    hint=f"at most {wells[ref]:g} microliter",
                )
            if sign < 0 and held + ul > 200:
                raise Interlock("tip over capacity", field=f"{at}/volume")
            if sign > 0 and ul > held:
                raise Interlock("tip holds less", field=f"{at}/volume")
            if sign > 0 and wells[ref] + ul > (20000 if ref.startswith("stock") else 360):
                raise Interlock("well overfill", field=f"{at}/volume")
            wells[ref] += sign * ul
            tips[ch] = held - sign * ul
            done.append((ch, ref, ul))
        self.wells, self.tip = wells, tips
        return done

    async def aspirate(self, items: Sequence[Any]) -> Any:
        return {"items": [self._moved(ch, ref, ul) for ch, ref, ul in self._move(items, -1)]}

    async def dispense(self, items: Sequence[Any]) -> Any:
        return {"items": [self._moved(ch, ref, ul) for ch, ref, ul in self._move(items, +1)]}

    def _moved(self, channel: int, ref: str, ul: float) -> Any:
        return {
            "channel": channel,
            "well": ref,
            "volume": qty(ul, UL),
            "tip_volume": qty(self.tip[channel] or 0.0, UL),
            "well_volume": qty(self.wells[ref], UL),
        }

    async def transfer(
        self,
        transfers: Sequence[Any],
        tip_rack: str,
        tips: str = "new",
        channels: Sequence[int] = (),
        mix_cycles: int = 0,
        mix_volume: Any = None,
    ) -> Any:
        """Sequentially on the first listed channel's mounted tip (the fake has no tip policy)."""
        ch = channels[0] if channels else 0
        self._tip(ch, "/channels")
        wells, tip = dict(self.wells), dict(self.tip)
        try:
            for t in transfers:
                item = {"channel": ch, "volume": t["volume"]}
                self._move([{**item, "well": t["source"]}], -1)
                self._move([{**item, "well": t["destination"]}], +1)
        except Exception:
            self.wells, self.tip = wells, tip
            raise
        total = sum(magnitude(t["volume"], UL) for t in transfers)
        return {
            "transfers": len(transfers),
            "volume": qty(total, UL),
            "rounds": len(transfers),
            "trips": len(transfers),
            "tips_used": 0,
            "seconds": qty(0.0, "second"),
            "notes": [],
        }

    async def mix(self, items: Sequence[Any], cycles: int) -> Any:
        mixed = []
        for i, item in enumerate(items):
            self._well(item["well"], f"/items/{i}/well")
            self._tip(item["channel"], f"/items/{i}/channel")
            mixed.append(
                {
                    "channel": item["channel"],
                    "well": item["well"],
                    "volume": qty(magnitude(item["volume"], UL), UL),
                }
            )
        return {"items": mixed, "cycles": cycles}

    async def move_plate(self, plate: str, destination: str) -> Any:
        if plate != "plate_1":
            raise UnknownResource(f"no plate {plate!r}", field="/plate")
        if destination not in ("site_1", "reader"):
            raise UnknownResource(f"no site {destination!r}", field="/destination")
        self.plate_location = destination
        return {"plate": plate, "location": destination}

    async def get_deck(self) -> Any:
        return self.state()

    def state(self) -> dict[str, Any]:
        return {
            "labware": [
                {
                    "name": "plate_1",
                    "kind": "plate",
                    "location": self.plate_location,
                    "well_capacity": qty(360.0, UL),
                    "wells": {
                        k.split(":")[1]: v
                        for k, v in self.wells.items()
                        if v and k.startswith("plate_1")
                    },
                }
            ],
            "tips_left": {"tips": self.tips_left},
            "channels": [
                {
                    "channel": ch,
                    "tip": None if v is None else "tips",
                    "tip_volume": qty(v or 0.0, UL),
                }
                for ch, v in self.tip.items()
            ],
            "volume_unit": UL,
            "labels": {"stock:A1": "stock"},
            "free_sites": [] if self.plate_location == "site_1" else ["site_1"],
        }


class FakePlateReader(PlateReader):
    """Reads 0.1 OD per 100 µL in the fake liquid handler's wells."""

    limits = PlateReaderLimits()

    def __init__(self, name: str = "reader", lh: FakeLiquidHandler | None = None) -> None:
        super().__init__(name)
        self.lh = lh

    def _plate_wells(self, plate: str) -> list[str]:
        if plate != "plate_1":
            raise UnknownResource(f"no plate {plate!r}", field="/plate", hint="plates: plate_1")
        if self.lh is not None and self.lh.plate_location != "reader":
            raise PreconditionFailed("plate_1 is not in the reader", field="/plate")
        return list(WELLS)

    def _od(self, well: str) -> float:
        return 0.001 * (self.lh.wells[f"plate_1:{well}"] if self.lh else 0.0)

    async def _read_absorbance(self, plate: str, wells: list[str], nm: float) -> dict[str, float]:
        return {w: self._od(w) for w in wells}

    async def _read_absorbance_spectrum(
        self, plate: str, wells: list[str], nm: list[float]
    ) -> dict[str, list[float]]:
        return {w: [self._od(w) * np.exp(-(((x - 500) / 50) ** 2)) for x in nm] for w in wells}

    async def _read_absorbance_kinetic(
        self, plate: str, wells: list[str], nm: float, interval_s: float, reads: int
    ) -> tuple[list[float], dict[str, list[float]]]:
        """The same OD at every read, exactly ``interval_s`` apart."""
        return [i * interval_s for i in range(reads)], {w: [self._od(w)] * reads for w in wells}

    async def _read_fluorescence(
        self,
        plate: str,
        wells: list[str],
        excitation_nm: float,
        emission_nm: float,
        gain: int,
        focal_height_mm: float,
    ) -> dict[str, float]:
        return {w: 1000 * self._od(w) for w in wells}

    async def _read_luminescence(self, plate: str, wells: list[str]) -> dict[str, float]:
        return {w: 10.0 for w in wells}


class FakeSpectrometer(Spectrometer):
    """A noiseless 512-pixel spectrometer looking at a 0.5-OD Gaussian band at 550 nm."""

    limits = SpectrometerLimits()

    def __init__(self, name: str = "spec") -> None:
        super().__init__(name)
        self._nm = np.linspace(300.0, 800.0, 512)
        self.sent_integration_s: float | None = None

    async def _set_integration_time(self, seconds: float) -> None:
        self.sent_integration_s = seconds

    async def _acquire(self, scans: int, *, dark: bool) -> np.ndarray:
        t = self.sent_integration_s or 0.0
        dark_counts = 1000.0 + 100.0 * t
        if dark:
            return np.full(self._nm.size, dark_counts)
        lamp = 4e5 * t * np.ones_like(self._nm)
        sample = 10 ** (-0.5 * np.exp(-(((self._nm - 550) / 40) ** 2)))
        return np.minimum(dark_counts + lamp * sample, self.full_scale())

    def wavelengths(self) -> np.ndarray:
        return self._nm

    def full_scale(self) -> float:
        return 65535.0


def fake_lab(**kwargs: Any) -> Any:
    from labtools import Lab

    lh = FakeLiquidHandler()
    return Lab([lh, FakePlateReader(lh=lh), FakeSpectrometer()], **kwargs)


def needs_an_extra(**_: Any) -> None:
    """A constructor whose optional dependency is missing, as PyLabRobot's FTDI readers say."""
    raise RuntimeError("this backend needs pylibftdi: pip install pylabrobot[ftdi]")


def downloads_a_definition(**_: Any) -> None:
    """A constructor that fetches a file and finds no network, as PyLabRobot's OT-2 labware."""
    raise OSError("<urlopen error [Errno -3] Temporary failure in name resolution>")
