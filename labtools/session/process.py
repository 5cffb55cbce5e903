"""Process-grounded reward: what an episode's journal shows the agent did.

:func:`analyse` replays the journal's successful liquid-handling calls on a nominal bench (each
container's contents as µL of the *primary sources* they came from: a stock, the unknown, a
container drawn from before anything was put in it) and pairs every plate-reader reading with
what the well nominally held when it was read. The detectors below score such an
:class:`Episode` from 0 to 1 (blanks and controls measured, replicates, readings inside the
reader's accurate range, standards that bracket the unknown, …); a task's :class:`Rubric`
weighs them, and :meth:`Rubric.combine` lets the process cost at most a stated share of the
outcome, never add to a wrong one. Deterministic: nothing here draws or reads a clock.

Generic on purpose: a rubric names containers (``"reservoir:A1"``) and the task's own end state;
this module knows tools only by their verbs (``transfer``, ``read_absorbance``, …).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from labtools.instruments.plate_reader import ACCURATE_OD
from labtools.units import VOLUME, WAVELENGTH, magnitude

__all__ = [
    "ACCURATE_OD",
    "Component",
    "Composition",
    "Episode",
    "Reading",
    "Rubric",
    "analyse",
    "blanks",
    "bracketed",
    "controls",
    "in_range_share",
    "levels",
    "references",
    "replicates",
    "usable_reading",
    "verified",
]


#: µL of each primary source in a container
Composition = Mapping[str, float]

#: reader verbs and the mode their readings are filed under
_READS = {
    "read_absorbance": "absorbance",
    "read_absorbance_spectrum": "spectrum",
    "read_absorbance_kinetic": "kinetic",
    "read_fluorescence": "fluorescence",
    "read_luminescence": "luminescence",
}


@dataclass(frozen=True)
class Reading:
    """One well's values from one reader call, with what the well nominally held then."""

    seq: int
    well: str  # "<plate>:<well>"
    mode: str  # absorbance, spectrum, kinetic, fluorescence, luminescence
    wavelength_nm: float | None
    values: tuple[float, ...]  # the finite values recorded (empty if the journal lacks them)
    saturated: bool
    contents: Composition

    @property
    def volume_ul(self) -> float:
        return sum(self.contents.values())

    @property
    def empty(self) -> bool:
        return self.volume_ul <= 0.0

    @property
    def peak(self) -> float | None:
        """The highest value (a spectrum's peak, a kinetic read's end); ``inf`` if saturated or
        over the reader's range."""
        if self.saturated:
            return math.inf
        return max(self.values) if self.values else None

    def fraction(self, source: str) -> float:
        """The share of the well's volume that came from ``source``."""
        volume = self.volume_ul
        return self.contents.get(source, 0.0) / volume if volume > 0 else 0.0

    def holds(self, sources: Iterable[str]) -> bool:
        """Whether any of ``sources`` went into the well."""
        return any(self.contents.get(s, 0.0) > 0.0 for s in sources)

    def only(self, sources: Iterable[str]) -> bool:
        """Whether the well holds liquid and all of it came from ``sources``."""
        allowed = set(sources)
        return not self.empty and all(s in allowed for s, v in self.contents.items() if v > 0)

    @property
    def condition(self) -> tuple[tuple[str, str], ...]:
        """The nominal composition as shares of each source to two significant figures: wells
        with equal conditions are replicates."""
        return tuple(
            sorted((s, f"{self.fraction(s):.2g}") for s, v in self.contents.items() if v > 0)
        )


@dataclass(frozen=True)
class Episode:
    """An analysed journal: the readings in order, each container's nominal end contents and
    the journal seq of its last change; ``submission`` and ``shared`` (the lab's shared
    objects: the physical end state) are the task's, for its own components."""

    readings: tuple[Reading, ...]
    contents: Mapping[str, Composition]
    changed: Mapping[str, int]
    submission: Mapping[str, Any] | None = None
    shared: Mapping[str, Any] = field(default_factory=dict)
    #: the episode's successful tool calls, in order, as the journal holds them (for a rubric
    #: about instruments the replay does not model, such as a balance)
    calls: tuple[Mapping[str, Any], ...] = ()

    def of(self, sources: Iterable[str], mode: str | None = None) -> list[Reading]:
        """Readings of wells holding any of ``sources`` (in ``mode``, if given)."""
        wanted = tuple(sources)
        return [r for r in self.readings if r.holds(wanted) and mode in (None, r.mode)]


Detector = Callable[[Episode], float]


@dataclass(frozen=True)
class Component:
    """One named process criterion of a rubric, with its weight and what it checks."""

    name: str
    weight: float
    measure: Detector
    doc: str


@dataclass(frozen=True)
class Rubric:
    """A task's process components and the share ``weight`` of the outcome they govern.

    ``process`` is the weighted mean of the components (each clamped to 0–1), and
    ``raw = outcome × (1 − weight + weight × process)``: a perfect process keeps the outcome, a
    process that earned nothing costs ``weight`` of it, and a wrong answer (outcome 0) stays 0
    whatever the process. ``note`` says what the outcome already rewards (a proper score for a
    stated uncertainty), so that it is not rewarded twice.
    """

    components: tuple[Component, ...]
    weight: float = 0.2
    note: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"a rubric's weight must be within 0–1, not {self.weight!r}")
        if not self.components or any(c.weight < 0 for c in self.components):
            raise ValueError("a rubric needs components with non-negative weights")
        if sum(c.weight for c in self.components) <= 0:
            raise ValueError("a rubric's component weights must not all be 0")

    def score(self, episode: Episode) -> dict[str, float]:
        """``process/<name>`` for each component, and their weighted mean as ``process``."""
        parts = {f"process/{c.name}": _unit(c.measure(episode), c.name) for c in self.components}
        total = sum(c.weight for c in self.components)
        mean = sum(c.weight * parts[f"process/{c.name}"] for c in self.components) / total
        return {"process": min(1.0, max(0.0, mean)), **parts}

    def combine(self, outcome: float, process: float) -> float:
        """The episode's raw score from its outcome and process (both 0–1)."""
        return outcome * (1.0 - self.weight + self.weight * process)


def _unit(value: float, name: str) -> float:
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"process component {name!r} is NaN")
    return min(1.0, max(0.0, value))


# -- the journal, replayed ---------------------------------------------------------------------
class _Bench:
    """Nominal contents of containers and tips, by primary source (µL)."""

    def __init__(self) -> None:
        self.contents: dict[str, dict[str, float]] = {}
        self.primary: set[str] = set()
        self.tips: dict[int, dict[str, float]] = {}
        self.changed: dict[str, int] = {}

    def draw(self, container: str, volume: float) -> dict[str, float]:
        """Take ``volume`` µL out of ``container``: a portion of what it holds, or, from a
        container nothing was put in (a stock), that container as a primary source."""
        held = self.contents.get(container)
        if held is None or container in self.primary:
            self.primary.add(container)
            return {container: volume}
        total = sum(held.values())
        if total <= 0:
            return {}
        share = min(volume / total, 1.0)
        portion = {s: v * share for s, v in held.items()}
        for s, v in portion.items():
            held[s] -= v
        return portion

    def pour(self, container: str, portion: Mapping[str, float], seq: int) -> None:
        """Add ``portion`` to ``container`` (a primary source keeps being itself)."""
        self.changed[container] = seq
        if container in self.primary:
            return
        held = self.contents.setdefault(container, {})
        for s, v in portion.items():
            held[s] = held.get(s, 0.0) + v

    def snapshot(self, container: str) -> dict[str, float]:
        if container in self.primary:
            return {container: 1.0}
        return {s: v for s, v in self.contents.get(container, {}).items() if v > 1e-9}


def analyse(
    events: Iterable[Mapping[str, Any]],
    *,
    resolve: Callable[[str], Mapping[str, Any]] | None = None,
    submission: Mapping[str, Any] | None = None,
    shared: Mapping[str, Any] | None = None,
) -> Episode:
    """Replay the tool-call events of one episode (from its last ``reset`` record on).

    ``resolve`` turns a data handle (``"reader/3"``) into its payload, for reads too large to
    come inline; without it such reads keep only what the result holds inline (peaks).
    """
    calls = _episode(list(events))
    bench = _Bench()
    readings: list[Reading] = []
    for event in calls:
        if event.get("ok") is not True:
            continue
        verb = _verb(event.get("tool"))
        seq = int(event.get("seq", 0))
        arguments = event.get("arguments")
        arguments = arguments if isinstance(arguments, Mapping) else {}
        if verb in ("transfer", "aspirate", "dispense", "drop_tips"):
            _pipette(bench, verb, arguments, seq)
        elif verb in _READS:
            data = event.get("data")
            if isinstance(data, Mapping):
                readings.extend(_readings(bench, _READS[verb], seq, data, resolve))
    contents = {k: bench.snapshot(k) for k in bench.contents}
    return Episode(
        tuple(readings),
        contents,
        dict(bench.changed),
        submission=submission,
        shared=dict(shared or {}),
        calls=tuple(e for e in calls if e.get("ok") is True and isinstance(e.get("tool"), str)),
    )


def _episode(events: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The events after the last ``reset`` record (all of them if there is none)."""
    starts = [i for i, e in enumerate(events) if e.get("event") == "reset"]
    return events[starts[-1] + 1 :] if starts else events


def _verb(name: object) -> str:
    """A tool's verb: its name after the instrument's prefix (``lh_transfer`` → transfer)."""
    return name.partition("_")[2] if isinstance(name, str) else ""


def _pipette(bench: _Bench, verb: str, arguments: Mapping[str, Any], seq: int) -> None:
    if verb == "transfer":
        for item in _items(arguments.get("transfers")):
            volume = _microlitres(item.get("volume"))
            source, destination = item.get("source"), item.get("destination")
            if volume and isinstance(source, str) and isinstance(destination, str):
                bench.changed[source] = seq
                bench.pour(destination, bench.draw(source, volume), seq)
    elif verb == "drop_tips":
        for channel in arguments.get("channels") or ():
            if isinstance(channel, int):
                bench.tips.pop(channel, None)
    else:
        for item in _items(arguments.get("items")):
            volume, well, channel = (
                _microlitres(item.get("volume")),
                item.get("well"),
                item.get("channel"),
            )
            if not (volume and isinstance(well, str) and isinstance(channel, int)):
                continue
            tip = bench.tips.setdefault(channel, {})
            if verb == "aspirate":
                bench.changed[well] = seq
                for s, v in bench.draw(well, volume).items():
                    tip[s] = tip.get(s, 0.0) + v
            else:
                total = sum(tip.values())
                share = min(volume / total, 1.0) if total > 0 else 0.0
                portion = {s: v * share for s, v in tip.items()}
                for s, v in portion.items():
                    tip[s] -= v
                bench.pour(well, portion, seq)


def _items(value: object) -> list[Mapping[str, Any]]:
    if not isinstance(value, list | tuple):
        return []
    return [item for item in value if isinstance(item, Mapping)]


def _microlitres(value: object) -> float | None:
    """A volume argument in µL, or ``None`` if it is not one (the call succeeded, so a volume
    the journal holds in another form is only a lost detail here)."""
    return _magnitude(VOLUME, value, "microliter")


def _magnitude(dimension: Any, value: object, unit: str) -> float | None:
    try:
        normal = dimension.normalize(value, "/")
        number = magnitude(dimension.from_json(normal["value"], normal["unit"]), unit)
    except Exception:  # any form the unit parser refuses
        return None
    return number if math.isfinite(number) and number > 0 else None


def _readings(
    bench: _Bench,
    mode: str,
    seq: int,
    data: Mapping[str, Any],
    resolve: Callable[[str], Mapping[str, Any]] | None,
) -> list[Reading]:
    plate = data.get("plate")
    if not isinstance(plate, str):
        return []
    wavelength = _magnitude(WAVELENGTH, data.get("wavelength"), "nanometer")
    if wavelength is None and isinstance(data.get("excitation_wavelength"), Mapping):
        wavelength = _magnitude(WAVELENGTH, data["excitation_wavelength"], "nanometer")
    values = _values(data, resolve)
    # a detector at its ceiling and a reading past the reader's range alike: above any range
    saturated = {
        w for key in ("saturated", "over_range") for w in data.get(key) or () if isinstance(w, str)
    }
    wells = sorted(set(values) | saturated)
    return [
        Reading(
            seq=seq,
            well=f"{plate}:{well}",
            mode=mode,
            wavelength_nm=wavelength,
            values=values.get(well, ()),
            saturated=well in saturated,
            contents=bench.snapshot(f"{plate}:{well}"),
        )
        for well in wells
    ]


def _values(
    data: Mapping[str, Any], resolve: Callable[[str], Mapping[str, Any]] | None
) -> dict[str, tuple[float, ...]]:
    """Each well's finite values: inline, else from the data handle, else a spectrum's peak."""
    found = data.get("values")
    if not found and resolve is not None and isinstance(data.get("data"), str):
        try:
            found = resolve(data["data"]).get("absorbance")
        except Exception:  # evicted or unknown handle: fall back to what came inline
            found = None
    if not found and isinstance(data.get("peaks"), Mapping):
        found = {w: [p.get("absorbance")] for w, p in data["peaks"].items() if isinstance(p, dict)}
    out: dict[str, tuple[float, ...]] = {}
    for well, value in (found or {}).items():
        series = value if isinstance(value, list | tuple) else [value]
        out[str(well)] = tuple(
            float(v)
            for v in series
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        )
    return out


# -- detectors ---------------------------------------------------------------------------------
def blanks(
    episode: Episode, analyte: Iterable[str], solvents: Iterable[str], *, empty: bool = True
) -> float:
    """The share of plates with readings of the ``analyte`` on which a blank was read too: a
    well holding only ``solvents`` or, with ``empty``, an empty well (the plate's own OD)."""
    solvents = tuple(solvents)
    plates = {_plate(r.well) for r in episode.of(analyte)}
    if not plates:
        return 0.0
    blanked = {
        _plate(r.well)
        for r in episode.readings
        if r.only(solvents) or (empty and r.empty and r.mode != "luminescence")
    }
    return len(plates & blanked) / len(plates)


def controls(episode: Episode, holds: Iterable[str], lacks: Iterable[str]) -> float:
    """1 if a well holding all of ``holds`` and none of ``lacks`` was read (a no-enzyme
    control, say), else 0."""
    holds, lacks = tuple(holds), tuple(lacks)
    for r in episode.readings:
        if all(r.holds([s]) for s in holds) and not r.holds(lacks):
            return 1.0
    return 0.0


def replicates(
    episode: Episode,
    analyte: Iterable[str],
    *,
    copies: int = 3,
    conditions: int = 1,
    mode: str | None = None,
) -> float:
    """Replicated conditions of wells holding the ``analyte``: each distinct condition counts
    (n − 1)/(copies − 1) for its n wells (at most 1); the sum over conditions, out of
    ``conditions``. A well read twice is one well: repeat readings are not replicates."""
    if copies < 2 or conditions < 1:
        raise ValueError("replicates need copies ≥ 2 and conditions ≥ 1")
    wells: dict[tuple[tuple[str, str], ...], set[str]] = {}
    for r in episode.of(analyte, mode):
        wells.setdefault(r.condition, set()).add(r.well)
    credit = sum(min(1.0, (len(w) - 1) / (copies - 1)) for w in wells.values())
    return min(1.0, credit / conditions)


def usable_reading(
    episode: Episode,
    analyte: Iterable[str],
    accurate: tuple[float, float] = ACCURATE_OD,
    *,
    modes: Iterable[str] = ("absorbance", "spectrum"),
) -> float:
    """1 if some reading of a well holding the ``analyte`` (a spectrum by its peak) lies in
    the ``accurate`` range, else 0."""
    low, high = accurate
    modes = tuple(modes)
    for r in episode.of(analyte):
        peak = r.peak
        if r.mode in modes and peak is not None and low <= peak <= high:
            return 1.0
    return 0.0


def in_range_share(
    episode: Episode,
    analyte: Iterable[str],
    accurate: tuple[float, float] = ACCURATE_OD,
    *,
    points: int = 1,
    modes: Iterable[str] = ("absorbance", "spectrum", "kinetic"),
    lacks: Iterable[str] = (),
) -> float:
    """The share of wells holding the ``analyte`` (and none of ``lacks``) with at least
    ``points`` values in the ``accurate`` range (a spectrum counts by its peak), 0 if none."""
    low, high = accurate
    modes, lacks = tuple(modes), tuple(lacks)
    good: dict[str, bool] = {}
    for r in episode.of(analyte):
        if r.mode not in modes or r.holds(lacks):
            continue
        values = (r.peak,) if r.mode == "spectrum" else r.values
        inside = sum(1 for v in values if v is not None and low <= v <= high)
        good[r.well] = good.get(r.well, False) or inside >= points
    return sum(good.values()) / len(good) if good else 0.0


def levels(
    episode: Episode,
    standard: str,
    *,
    count: int,
    lacks: Iterable[str] = (),
    mode: str | None = None,
) -> float:
    """Distinct shares of ``standard`` among read wells that hold none of ``lacks`` (the
    levels of a standard curve), out of ``count``."""
    lacks = tuple(lacks)
    shares = {
        f"{r.fraction(standard):.2g}" for r in episode.of([standard], mode) if not r.holds(lacks)
    }
    return min(1.0, len(shares) / count)


def bracketed(
    episode: Episode,
    analyte: Iterable[str],
    standard: str,
    accurate: tuple[float, float] = ACCURATE_OD,
) -> float:
    """1 if a reading of the ``analyte`` inside the ``accurate`` range lies between the lowest
    and highest readings of ``standard`` wells (without the analyte) taken at the same mode and
    wavelength, else 0."""
    analyte = tuple(analyte)
    low, high = accurate
    ladders: dict[tuple[str, float | None], list[float]] = {}
    for r in episode.of([standard]):
        if not r.holds(analyte) and r.peak is not None and math.isfinite(r.peak):
            ladders.setdefault((r.mode, r.wavelength_nm), []).append(r.peak)
    for r in episode.of(analyte):
        ladder = ladders.get((r.mode, r.wavelength_nm))
        peak = r.peak
        if ladder and peak is not None and max(low, min(ladder)) <= peak <= min(high, max(ladder)):
            return 1.0
    return 0.0


def references(
    episode: Episode, sources: Iterable[str], solvents: Iterable[str], *, accurate: bool = False
) -> float:
    """The share of ``sources`` read alone (a well holding that source and ``solvents`` only);
    with ``accurate``, only readings whose peak lies in :data:`ACCURATE_OD` count."""
    sources, solvents = tuple(sources), tuple(solvents)
    if not sources:
        return 0.0
    low, high = ACCURATE_OD
    seen = set()
    for r in episode.readings:
        for s in sources:
            if r.holds([s]) and r.only((s, *solvents)):
                peak = r.peak
                if not accurate or (peak is not None and low <= peak <= high):
                    seen.add(s)
    return len(seen) / len(sources)


def verified(episode: Episode, well: str) -> float:
    """1 if ``well`` was read after the last change to its contents, else 0."""
    last = episode.changed.get(well)
    return float(any(r.well == well and (last is None or r.seq > last) for r in episode.readings))


def _plate(well: str) -> str:
    return well.partition(":")[0]
