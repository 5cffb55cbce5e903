"""The demo experiment, entirely through tool calls: quantify a dye in an unknown sample.

1. Find the dye stock, water, the unknown and the waste on the deck by their labels.
2. Standards: a two-fold serial dilution of the stock in triplicate rows, with water blanks, in
   two batched transfers (water, then the stock and the dilution steps with mixing).
3. The unknown, neat, into the rows below (already holding water to make up the standards'
   volume), in the same batch as the last standards' surplus to the waste. Channel ``i`` makes
   standards row ``i`` and its unknown row, and gives the unknown the stock's volume: its
   systematic error cancels between the two.
4. Find the dye's absorbance peak from a spectrum of the top standards; read the plate there.
5. If the unknown reads outside the top half of the curve, pipette it again (made up with water
   to the same volume) at the volume that puts it near 80 % of the top standard, and read again.
6. Fit the standard curve; read the unknown's amount off it, with its uncertainty.
7. Record the unknown's spectrum in the cuvette with the spectrometer (dark, reference, sample),
   choosing the integration time from the reference's counts (optional).

A vertical beam reads ε·c·h, with h the liquid's height; in wells of one plate holding one
volume h is the same (the wells taper, so h is not proportional to the volume), and the OD
counts the dye in the well (nmol): the curve is OD against nmol per well, every well at
``WELL_UL``, and the unknown's amount over its neat volume is its concentration.

The protocol calls tools through any ``call(name, **arguments) -> data`` function, so the same
steps run on a lab (the demo) or through a grounded-reward session (the standard-curve task).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from labtools.config import import_object
from labtools.demo.analysis import StandardCurve
from labtools.demo.labels import label_micromolar, label_tolerance
from labtools.demo.propagation import SerialDilution, relative_sd
from labtools.errors import ToolError
from labtools.instruments.liquid_handler import TipPolicy
from labtools.lab import Lab
from labtools.result import ToolResult
from labtools.units import QuantityJSON, qty

UL = "microliter"
NM = "nanometer"
TIPS = "tips_300ul"
DYE = "tartrazine"
#: the virtual handler's pipetting specification: each tip type's published ISO 8655-2 limits
#: (``TipClass`` by the tips' nominal µL), named by import path as the lab file names its classes
PIPETTE_SPEC = "labtools.simulators.pipetting:TIP_CLASSES"
TIP_UL = 300.0  # the nominal volume of the tips in TIPS
#: tartrazine's molar absorptivity at its peak, from the literature (E1%1cm 530, M 534.36 g/mol,
#: EU Regulation 231/2012): what a chemist would look up for a Beer–Lambert cross-check
TARTRAZINE_EPSILON = 28_300.0
TOP_UM = 160.0  # top standard (µM): about 1.2 OD for a yellow dye in 100 µL
STEPS = 7  # two-fold steps: 160 … 2.5 µM
REPLICATE_ROWS = "ABC"
UNKNOWN_ROWS = "DEF"
WELL_UL = 100.0
#: one channel per replicate: channel i serves standards row i and unknown row i
CHANNELS = tuple(range(len(REPLICATE_ROWS)))
MIX = (5, 100.0)  # after each dilution step: cycles, µL drawn (half the well)
#: the unknown's reading is used if it lies within this share of the top standard's OD …
ACCEPT = (0.45, 1.0)
#: … otherwise it is pipetted again to read about this share, within SAMPLE_UL (µL)
TARGET = 0.8
SAMPLE_UL = (10.0, 100.0)


#: ``call(name, **arguments)`` → the tool's data; raises the tool's error if it was refused
Call = Callable[..., dict[str, Any]]


def ul(value: float) -> QuantityJSON:
    """A volume in µL, rounded to 1 nL."""
    return qty(value, UL, decimals=3)


def one(channel: int, well: str, volume: QuantityJSON) -> list[dict[str, Any]]:
    """The ``items`` of a one-channel ``lh_aspirate``, ``lh_dispense`` or ``lh_mix``."""
    return [{"channel": channel, "well": well, "volume": volume}]


def batch(
    moves: Iterable[tuple[str, str, float | QuantityJSON]],
    tips: TipPolicy = "new",
    *,
    tip_rack: str = TIPS,
    channels: Sequence[int] = CHANNELS,
    mix: tuple[int, float] = (0, 0.0),
) -> dict[str, Any]:
    """``lh_transfer`` arguments: each move (source, destination, volume, µL if a number) in
    order, with the tip policy, channels and mixing (cycles, µL) after each transfer."""
    return {
        "transfers": [
            {"source": s, "destination": d, "volume": v if isinstance(v, dict) else ul(v)}
            for s, d, v in moves
        ],
        "tip_rack": tip_rack,
        "tips": tips,
        "channels": list(channels),
        "mix_cycles": mix[0],
        "mix_volume": ul(mix[1]),
    }


def with_tip(channel: int, source: str, destination: str, volume: QuantityJSON) -> dict[str, Any]:
    """``lh_transfer`` arguments for one transfer with the tip already on ``channel`` (none
    picked up or dropped, no mixing): one aspirate and one dispense on that channel."""
    return batch([(source, destination, volume)], "mounted", tip_rack="", channels=[channel])


@dataclass
class Transcript:
    """Calls tools on the lab, printing one line per call; stops the run on a refusal."""

    lab: Lab
    echo: Callable[[str], None] = print
    calls: int = 0

    def __call__(self, name: str, **arguments: Any) -> dict[str, Any]:
        result: ToolResult = self.lab.call(name, arguments)
        self.calls += 1
        self.echo(f"{self.calls:>4} {name}({_brief(arguments)}) -> {_brief_result(result)}")
        return result.unwrap()


@dataclass
class Outcome:
    dye: str
    wavelength_nm: float
    curve: StandardCurve  # OD against nmol per well
    standards: dict[str, float]  # well -> nominal nmol
    unknown_wells: list[str]
    sample_ul: float  # unknown per well, neat
    estimate_um: float
    sd_um: float
    plate_reading: dict[str, float]
    blank: float
    budget: dict[str, float]  # relative standard uncertainties by source
    spectrum: dict[str, Any] | None  # the cuvette spectrum, if recorded
    spectrometer_estimate_um: float | None
    #: wells read but left out as defects (:data:`~labtools.demo.analysis.OUTLIER_Z`)
    left_out: tuple[str, ...] = ()
    #: wells the last read gave no number for: over the reader's range, or saturated
    unread: tuple[str, ...] = ()


class DyeQuantification:
    """The protocol. ``run()`` returns the :class:`Outcome`.

    On a ``lab``, calls go through a :class:`Transcript` echoing each call, and the cuvette
    spectrum is recorded. With ``call`` (any :data:`Call`, e.g. through a session) and no lab,
    the cuvette step, which needs the lab's data store for the full spectrum, is left out.
    """

    def __init__(
        self,
        lab: Lab | None = None,
        echo: Callable[[str], None] = print,
        *,
        call: Call | None = None,
    ) -> None:
        if call is None:
            if lab is None:
                raise ValueError("give the lab to run on, or a call function")
            call = Transcript(lab, echo)
        self.call = call
        self.lab = lab

    # -- deck ----------------------------------------------------------------------------------
    def _find(self, deck: dict[str, Any], word: str) -> tuple[str, str]:
        """The container whose label starts with ``word``."""
        for ref, label in deck.get("labels", {}).items():
            if label.lower().startswith(word):
                return ref, label
        raise ToolError.of("unknown_resource", f"no labelled '{word}' on the deck")

    def run(self) -> Outcome:
        stock_label = self._locate(self.call("lh_get_deck"))
        # the top well gets twice a standard's volume and gives half of it to the next
        self.stock_ul = 2 * WELL_UL * TOP_UM / label_micromolar(stock_label)
        standards = self._standards()
        self._unknown_into(1, self.stock_ul, surplus=True)
        self.call("lh_move_plate", plate="plate_1", destination="reader")
        wavelength = self._peak()
        values = self._read(wavelength, 1)
        sample_ul, column = self.stock_ul, 1
        share = self._share(values)
        if not ACCEPT[0] <= share <= ACCEPT[1]:
            sample_ul, column = self._volume_for(share), 2
            self.call("lh_move_plate", plate="plate_1", destination=self.home)
            if water := self._make_up(column, sample_ul):
                self.call("lh_transfer", **batch(water, "reuse"))
            self._unknown_into(column, sample_ul)
            self.call("lh_move_plate", plate="plate_1", destination="reader")
            values = self._read(wavelength, column)

        blank = self._blank(values)
        wells = list(standards)
        curve, off = StandardCurve.fit_robust(
            list(standards.values()), [values[w] - blank for w in wells]
        )
        left_out = [wells[i] for i in off]
        standards = {w: n for w, n in standards.items() if w not in left_out}
        replicates = [f"{r}{column}" for r in UNKNOWN_ROWS]
        consistent = curve.consistent([values[w] - blank for w in replicates])
        unknown_wells = [w for w, ok in zip(replicates, consistent, strict=True) if ok]
        left_out += [w for w in replicates if w not in unknown_wells]
        nmol, sd = curve.invert([values[w] - blank for w in unknown_wells])
        budget = self._budget(sd / nmol, label_tolerance(stock_label), sample_ul, nmol)
        estimate = nmol / sample_ul * 1000.0
        spectrum, spec_um = self._cuvette_spectrum() if self.lab is not None else (None, None)
        return Outcome(
            DYE,
            wavelength,
            curve,
            standards,
            unknown_wells,
            sample_ul,
            estimate,
            estimate * sum(v**2 for v in budget.values()) ** 0.5,
            values,
            blank,
            budget,
            spectrum,
            spec_um,
            tuple(left_out),
            self.unread,
        )

    def _locate(self, deck: dict[str, Any]) -> str:
        """Note the stock, water, unknown, waste and the plate's site; returns the stock's label."""
        self.stock, stock_label = self._find(deck, DYE)
        self.water, _ = self._find(deck, "water")
        self.unknown, _ = self._find(deck, "unknown")
        self.waste, _ = self._find(deck, "waste")
        self.home = next(lw["location"] for lw in deck["labware"] if lw["name"] == "plate_1")
        return stock_label

    # -- steps ---------------------------------------------------------------------------------
    def _standards(self) -> dict[str, float]:
        """Water into every standard and blank well (one tip per channel), then the stock into
        column 1 and the two-fold steps across, each with a new tip and mixing. Returns each
        standard's nominal amount (nmol); column ``STEPS + 1`` stays water: the blanks."""
        water = [(self.water, f"plate_1:{r}1", 2 * WELL_UL - self.stock_ul) for r in REPLICATE_ROWS]
        water += [
            (self.water, f"plate_1:{r}{c}", WELL_UL)
            for c in range(2, STEPS + 2)
            for r in REPLICATE_ROWS
        ]
        water += self._make_up(1, self.stock_ul)
        self.call("lh_transfer", **batch(water, "reuse"))
        steps = [(self.stock, f"plate_1:{r}1", self.stock_ul) for r in REPLICATE_ROWS]
        steps += [
            (f"plate_1:{r}{c}", f"plate_1:{r}{c + 1}", WELL_UL)
            for c in range(1, STEPS)
            for r in REPLICATE_ROWS
        ]
        self.call("lh_transfer", **batch(steps, mix=MIX))
        top_nmol = TOP_UM * WELL_UL / 1000.0
        return {
            f"{r}{c}": top_nmol / 2 ** (c - 1) for r in REPLICATE_ROWS for c in range(1, STEPS + 1)
        }

    def _make_up(self, column: int, volume: float) -> list[tuple[str, str, float]]:
        """Water into each unknown row of ``column`` to make ``volume`` µL of the unknown up to
        ``WELL_UL``."""
        rest = round(WELL_UL - volume, 1)
        return [(self.water, f"plate_1:{r}{column}", rest) for r in UNKNOWN_ROWS] if rest else []

    def _unknown_into(self, column: int, volume: float, *, surplus: bool = False) -> None:
        """The unknown, neat, ``volume`` µL into each unknown row of ``column`` (made up with
        water beforehand), a new tip each; with ``surplus``, first the last standards' extra
        100 µL to the waste."""
        moves = (
            [(f"plate_1:{r}{STEPS}", self.waste, WELL_UL) for r in REPLICATE_ROWS]
            if surplus
            else []
        )
        moves += [(self.unknown, f"plate_1:{r}{column}", volume) for r in UNKNOWN_ROWS]
        self.call("lh_transfer", **batch(moves))

    def _peak(self) -> float:
        """The absorbance peak (nm) of the top standards' spectrum."""
        top = self.call(
            "reader_read_absorbance_spectrum",
            plate="plate_1",
            wells=[f"{r}1" for r in REPLICATE_ROWS],
            start=qty(350, NM),
            stop=qty(550, NM),
            step=qty(2, NM),
        )
        return top["peaks"][f"{REPLICATE_ROWS[0]}1"]["wavelength"]["value"]

    def _read(self, wavelength: float, columns: int) -> dict[str, float]:
        """OD at ``wavelength`` of the standards, the blanks and the unknown's first columns."""
        wells = [f"{r}{c}" for r in REPLICATE_ROWS for c in range(1, STEPS + 2)]
        wells += [f"{r}{c}" for r in UNKNOWN_ROWS for c in range(1, columns + 1)]
        reading = self.call(
            "reader_read_absorbance", plate="plate_1", wavelength=qty(wavelength, NM), wells=wells
        )
        self.unread = (*reading["over_range"], *reading["saturated"])
        return reading["values"]

    def _blank(self, values: dict[str, float]) -> float:
        """The mean OD of the blanks."""
        return sum(values[f"{r}{STEPS + 1}"] for r in REPLICATE_ROWS) / len(REPLICATE_ROWS)

    def _share(self, values: dict[str, float]) -> float:
        """The unknown's blank-corrected OD in column 1 as a share of the top standard's (means
        of the rows; a saturated well counts as infinite)."""
        blank = self._blank(values)
        top = sum(values[f"{r}1"] for r in REPLICATE_ROWS) / len(REPLICATE_ROWS) - blank
        unknown = sum(values.get(f"{r}1", float("inf")) for r in UNKNOWN_ROWS)
        return (unknown / len(UNKNOWN_ROWS) - blank) / top

    def _volume_for(self, share: float) -> float:
        """The unknown's volume (µL, to 0.1) that reads about ``TARGET`` of the top standard,
        from the ``share`` it read at the stock's volume."""
        low, high = SAMPLE_UL
        wanted = self.stock_ul * TARGET / share if share > 0 else high
        return round(min(max(wanted, low), high), 1)

    def _budget(
        self, fit: float, certificate: float, sample_ul: float, nmol: float
    ) -> dict[str, float]:
        """Relative standard uncertainties: the fit and replicates (type A), the stock's
        certificate and the pipetting (type B, the tips' ISO 8655-2 limits): its random and
        systematic parts in quadrature (:meth:`_pipetting_random`, :meth:`_pipetting_offset`)."""
        random, offset = self._pipetting_random(sample_ul, nmol), self._pipetting_offset(sample_ul)
        return {
            "fit and replicates": fit,
            "stock certificate": certificate,
            "pipetting (ISO 8655)": (random**2 + offset**2) ** 0.5,
        }

    def _pipetting_random(self, sample_ul: float, nmol: float) -> float:
        """The random error of every draw, propagated through the fit: each row's stock, water
        and transfers (shared by the row's standards) and the unknown's draw into each of its
        wells (``nmol`` per well at ``sample_ul``). Each draw's SD is the tips' ISO 8655-2
        random-error limit in µL, which applies at every selectable volume."""
        row = SerialDilution(
            self.stock_ul,
            (2 * WELL_UL - self.stock_ul, *(WELL_UL,) * (STEPS - 1)),
            (WELL_UL,) * STEPS,
        )
        rows = [row] * len(REPLICATE_ROWS)
        draws = len(rows) * len(row.volumes) + len(UNKNOWN_ROWS)
        limit = import_object(PIPETTE_SPEC)[TIP_UL].nominal.random_ul
        stock = TOP_UM * WELL_UL / 1000.0 / row.amounts(row.volumes)[0]  # nmol per µL of stock
        return relative_sd(rows, stock, [sample_ul] * len(UNKNOWN_ROWS), nmol, [limit] * draws)

    def _pipetting_offset(self, sample_ul: float) -> float:
        """The channels' systematic error, bounded by the tips' ISO 8655-2 limit (rectangular:
        its standard uncertainty is limit/√3, GUM) and taken as an offset in µL, the worst case
        for a ratio: it cancels between the stock and the unknown at equal volumes, otherwise
        enters as limit/√3 · |1/V_unknown − 1/V_stock|; the channels' errors are independent, so
        their mean's is 1/√(channels) of one. Equal-volume dilution steps on one channel carry
        none."""
        limit = import_object(PIPETTE_SPEC)[TIP_UL].nominal.systematic_ul / 3**0.5
        return limit * abs(1 / sample_ul - 1 / self.stock_ul) / len(CHANNELS) ** 0.5

    def _cuvette_spectrum(self) -> tuple[dict[str, Any], float | None]:
        """Blank the spectrometer on water in the cuvette, then add the unknown, mix it in with
        the tip that added it, and measure."""
        if self.lab is None:
            raise ValueError("the cuvette spectrum needs the lab's data store")
        blank_ul, sample_ul = 1200.0, 100.0
        water = [(self.water, "cuvette", blank_ul)]
        self.call("lh_transfer", **batch(water, tip_rack="tips_1000ul", channels=[0]))
        time_ms = 20.0
        for _ in range(6):  # choose the exposure: reference peak near 70 % of full scale
            self.call("spec_set_integration_time", time=qty(time_ms, "millisecond"))
            probe = self.call("spec_acquire_spectrum", scans=1)
            fraction = probe["max_counts"] / probe["full_scale"]
            if 0.5 <= fraction <= 0.85:
                break
            time_ms = min(max(time_ms * 0.7 / max(fraction, 1e-3), 1.0), 10_000.0)
        self.call("spec_acquire_dark", scans=10)
        self.call("spec_acquire_reference", scans=10)
        self.call("lh_pick_up_tips", tip_rack=TIPS, channels=[0])
        self.call("lh_transfer", **with_tip(0, self.unknown, "cuvette", ul(sample_ul)))
        self.call("lh_mix", items=one(0, "cuvette", ul(250)), cycles=8)
        self.call("lh_drop_tips", channels=[0])
        spectrum = self.call("spec_measure_absorbance", scans=10)
        full = self.lab.data(spectrum["data"])
        if spectrum["peak_absorbance"] is None:
            raise ToolError.of(
                "precondition_failed",
                "the cuvette's spectrum shows no band above the noise",
                hint="check the sample went into the cuvette and the lamp is on",
            )
        cuvette_um = spectrum["peak_absorbance"] / TARTRAZINE_EPSILON * 1e6  # 1 cm path
        return {**spectrum, "full": full}, cuvette_um * (blank_ul + sample_ul) / sample_ul


def _brief(arguments: dict[str, Any]) -> str:
    """A call's arguments as the transcript shows them."""
    return ", ".join(f"{key}={_argument(value)}" for key, value in arguments.items())


def _argument(value: Any) -> str:
    """Quantities as '5 microliter'; a list of one item in full, longer ones by their length."""
    if isinstance(value, dict) and set(value) == {"value", "unit"}:
        return f"{value['value']:g} {value['unit']}"
    if isinstance(value, dict):
        return "{" + _brief(value) + "}"
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return f"[{_argument(value[0])}]" if len(value) == 1 else f"[{len(value)} items]"
    if isinstance(value, list) and len(value) > 4:
        return f"[{len(value)} items]"
    return repr(value)


def _brief_result(result: ToolResult) -> str:
    if not result.ok:
        error = result.error or {}
        return f"REFUSED {error.get('code')}: {error.get('message')}"
    data = result.data or {}
    keys = [
        k
        for k in data
        if k
        not in ("values", "wavelengths", "absorbance", "labware", "channels", "peaks", "labels")
    ]
    shown = {k: data[k] for k in keys[:3]}
    if "values" in data:
        shown["wells"] = len(data["values"])
    return "ok " + ", ".join(f"{k}={_short(v)}" for k, v in shown.items())


def _short(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"value", "unit"}:
        return f"{value['value']:g} {value['unit']}"
    text = repr(value)
    return text if len(text) < 40 else text[:37] + "…"
