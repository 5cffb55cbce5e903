"""The demo experiment, entirely through tool calls: quantify a dye in an unknown sample.

1. Find the dye stock, water and the unknown on the deck by their labels.
2. Serial dilution of the stock in triplicate rows of a plate, with blanks.
3. Find the dye's absorbance peak from a spectrum of the top standard; read the plate there.
4. Read the unknown in triplicate; dilute and read again while it lies above the top standard.
5. Fit the standard curve; read the unknown's concentration off it, with its uncertainty.
6. Record the unknown's spectrum in the cuvette with the spectrometer (dark, reference, sample),
   choosing the integration time from the reference's counts (optional).

The protocol calls tools through any ``call(name, **arguments) -> data`` function, so the same
steps run on a lab (the demo) or through a grounded-reward session (the standard-curve task).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labtools.demo.analysis import StandardCurve
from labtools.demo.labels import label_micromolar, label_tolerance
from labtools.errors import ToolError
from labtools.lab import Lab
from labtools.result import ToolResult
from labtools.units import QuantityJSON, qty

UL = "microliter"
NM = "nanometer"
#: ISO 8655-2 maximum permissible systematic error of a 200 µL single-channel pipette (µL),
#: the handler's specification; as a rectangular bound its standard uncertainty is MPE/√3 (GUM)
PIPETTE_MPE_UL = 1.6
#: tartrazine's molar absorptivity at its peak, from the literature (E1%1cm 530, M 534.36 g/mol,
#: EU Regulation 231/2012): what a chemist would look up for a Beer–Lambert cross-check
TARTRAZINE_EPSILON = 28_300.0
TOP_UM = 160.0  # top standard (µM): about 1.2 OD for a yellow dye in 100 µL
STEPS = 7  # two-fold steps: 160 … 2.5 µM
REPLICATE_ROWS = "ABC"
UNKNOWN_ROWS = "DEF"
WELL_UL = 100.0


#: ``call(name, **arguments)`` → the tool's data; raises the tool's error if it was refused
Call = Callable[..., dict[str, Any]]


def ul(value: float) -> QuantityJSON:
    """A volume in µL, rounded to 1 nL."""
    return qty(value, UL, decimals=3)


def one(channel: int, well: str, volume: QuantityJSON) -> list[dict[str, Any]]:
    """The ``items`` of a one-channel ``lh_aspirate``, ``lh_dispense`` or ``lh_mix``."""
    return [{"channel": channel, "well": well, "volume": volume}]


def with_tip(channel: int, source: str, destination: str, volume: QuantityJSON) -> dict[str, Any]:
    """``lh_transfer`` arguments for one transfer with the tip already on ``channel`` (none
    picked up or dropped, no mixing): one aspirate and one dispense on that channel."""
    return {
        "transfers": [{"source": source, "destination": destination, "volume": volume}],
        "tip_rack": "",
        "tips": "mounted",
        "channels": [channel],
        "mix_cycles": 0,
        "mix_volume": qty(0.0, UL),
    }


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
    curve: StandardCurve
    standards: dict[str, float]  # well -> nominal µM
    unknown_wells: list[str]
    dilution: float
    estimate_um: float
    sd_um: float
    plate_reading: dict[str, float]
    blank: float
    budget: dict[str, float]  # relative standard uncertainties by source
    spectrum: dict[str, Any] | None  # the cuvette spectrum, if recorded
    spectrometer_estimate_um: float | None


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
        self.channel = 0

    # -- deck ----------------------------------------------------------------------------------
    def _find(self, deck: dict[str, Any], word: str) -> tuple[str, str]:
        """The container whose label starts with ``word``."""
        for ref, label in deck.get("labels", {}).items():
            if label.lower().startswith(word):
                return ref, label
        raise ToolError.of("unknown_resource", f"no labelled '{word}' on the deck")

    def run(self) -> Outcome:
        deck = self.call("lh_get_deck")
        self.stock, stock_label = self._find(deck, "tartrazine")
        self.water, _ = self._find(deck, "water")
        self.unknown, _ = self._find(deck, "unknown")
        self.waste, _ = self._find(deck, "waste")
        stock_um = label_micromolar(stock_label)
        stock_tolerance = label_tolerance(stock_label)
        self.dye = "tartrazine"

        standards = self._serial_dilution(stock_um)
        unknown_wells = [f"{r}1" for r in UNKNOWN_ROWS]
        dilution, column = 1.0, 1
        self._unknown_into(column, dilution)  # neat first, while the plate is on the deck
        self.call("lh_move_plate", plate="plate_1", destination="reader")
        top = self.call(
            "reader_read_absorbance_spectrum",
            plate="plate_1",
            wells=[f"{r}1" for r in REPLICATE_ROWS],
            start={"value": 350, "unit": NM},
            stop={"value": 550, "unit": NM},
            step={"value": 2, "unit": NM},
        )
        peak = top["peaks"]["A1"]["wavelength"]["value"]
        wavelength = {"value": peak, "unit": NM}
        while True:
            reading = self.call(
                "reader_read_absorbance",
                plate="plate_1",
                wavelength=wavelength,
                wells=_plate_wells(column),
            )
            values = reading["values"]
            blank = sum(values[f"{r}{STEPS + 1}"] for r in REPLICATE_ROWS) / 3
            top_od = sum(values[f"{r}1"] for r in REPLICATE_ROWS) / 3 - blank
            unknown_od = sum(values[w] for w in unknown_wells) / 3 - blank
            if unknown_od <= 0.95 * top_od or column >= 4:
                break
            dilution *= 4.0  # above the curve: dilute four-fold more and read again
            column += 1
            unknown_wells = [f"{r}{column}" for r in UNKNOWN_ROWS]
            self.call("lh_move_plate", plate="plate_1", destination=self.home)
            self._unknown_into(column, dilution)
            self.call("lh_move_plate", plate="plate_1", destination="reader")

        concentrations, absorbances = [], []
        for well, um in standards.items():
            concentrations.append(um)
            absorbances.append(values[well] - blank)
        curve = StandardCurve.fit(concentrations, absorbances)
        c, sd = curve.invert([values[w] - blank for w in unknown_wells])
        # uncertainty budget: the fit and replicates (type A), the stock's certificate and the
        # pipette's systematic error on the two volumes everything scales with (type B)
        mpe = PIPETTE_MPE_UL / 3**0.5
        budget = {
            "fit and replicates": sd / c,
            "stock certificate": stock_tolerance,
            "pipetting (ISO 8655)": ((mpe / self.stock_ul) ** 2 + (mpe / (WELL_UL / dilution)) ** 2)
            ** 0.5,
        }
        relative = sum(v**2 for v in budget.values()) ** 0.5
        spectrum, spec_um = self._cuvette_spectrum(peak) if self.lab is not None else (None, None)
        estimate = c * dilution
        return Outcome(
            self.dye,
            peak,
            curve,
            standards,
            unknown_wells,
            dilution,
            estimate,
            estimate * relative,
            values,
            blank,
            budget,
            spectrum,
            spec_um,
        )

    # -- steps ---------------------------------------------------------------------------------
    def _fresh_tip(self, rack: str = "tips_300ul") -> None:
        self.call("lh_pick_up_tips", tip_rack=rack, channels=[self.channel])

    def _drop(self) -> None:
        self.call("lh_drop_tips", channels=[self.channel])

    def _distribute(self, source: str, wells: list[str], volume: float) -> None:
        """One tip, refilled as needed, ``volume`` into each well."""
        self._fresh_tip()
        per_fill = int(280 // volume)
        for i in range(0, len(wells), per_fill):
            batch = wells[i : i + per_fill]
            self.call("lh_aspirate", items=one(self.channel, source, ul(volume * len(batch))))
            for well in batch:
                self.call("lh_dispense", items=one(self.channel, well, ul(volume)))
        self._drop()

    def _serial_dilution(self, stock_um: float) -> dict[str, float]:
        deck = self.call("lh_get_deck")
        self.home = next(lw["location"] for lw in deck["labware"] if lw["name"] == "plate_1")
        stock_ul = self.stock_ul = 200.0 * TOP_UM / stock_um
        # columns 2…STEPS take the dilution steps; column STEPS + 1 stays water: the blanks
        water_wells = [f"plate_1:{r}{c}" for r in REPLICATE_ROWS for c in range(2, STEPS + 2)]
        self._distribute(self.water, [f"plate_1:{r}1" for r in REPLICATE_ROWS], 200 - stock_ul)
        self._distribute(self.water, water_wells, WELL_UL)
        standards: dict[str, float] = {}
        for row in REPLICATE_ROWS:
            self._fresh_tip()
            self.call(
                "lh_transfer", **with_tip(self.channel, self.stock, f"plate_1:{row}1", ul(stock_ul))
            )
            self.call("lh_mix", items=one(self.channel, f"plate_1:{row}1", ul(150)), cycles=5)
            self._drop()
            for col in range(1, STEPS):
                self._fresh_tip()
                self.call(
                    "lh_transfer",
                    **with_tip(
                        self.channel, f"plate_1:{row}{col}", f"plate_1:{row}{col + 1}", ul(WELL_UL)
                    ),
                )
                self.call(
                    "lh_mix", items=one(self.channel, f"plate_1:{row}{col + 1}", ul(150)), cycles=5
                )
                self._drop()
            self._fresh_tip()  # the last step keeps 100 µL like the others
            self.call(
                "lh_transfer",
                **with_tip(self.channel, f"plate_1:{row}{STEPS}", self.waste, ul(WELL_UL)),
            )
            self._drop()
            for col in range(1, STEPS + 1):
                standards[f"{row}{col}"] = TOP_UM / 2 ** (col - 1)
        return standards

    def _unknown_into(self, column: int, dilution: float) -> None:
        wells = [f"plate_1:{r}{column}" for r in UNKNOWN_ROWS]
        sample = WELL_UL / dilution
        if dilution > 1:
            self._distribute(self.water, wells, WELL_UL - sample)
        for well in wells:
            self._fresh_tip()
            self.call("lh_transfer", **with_tip(self.channel, self.unknown, well, ul(sample)))
            if dilution > 1:
                self.call("lh_mix", items=one(self.channel, well, ul(80)), cycles=5)
            self._drop()

    def _cuvette_spectrum(self, peak_nm: float) -> tuple[dict[str, Any], float | None]:
        """Blank the spectrometer on water in the cuvette, then add the unknown and measure."""
        if self.lab is None:
            raise ValueError("the cuvette spectrum needs the lab's data store")
        blank_ul, sample_ul = 1200.0, 100.0
        self._fresh_tip("tips_1000ul")
        for _ in range(2):
            self.call(
                "lh_transfer", **with_tip(self.channel, self.water, "cuvette", ul(blank_ul / 2))
            )
        self._drop()
        time_ms = 20.0
        for _ in range(6):  # choose the exposure: reference peak near 70 % of full scale
            self.call("spec_set_integration_time", time={"value": time_ms, "unit": "millisecond"})
            probe = self.call("spec_acquire_spectrum", scans=1)
            fraction = probe["max_counts"] / probe["full_scale"]
            if 0.5 <= fraction <= 0.85:
                break
            time_ms = min(max(time_ms * 0.7 / max(fraction, 1e-3), 1.0), 10_000.0)
        self.call("spec_acquire_dark", scans=10)
        self.call("spec_acquire_reference", scans=10)
        self._fresh_tip()
        self.call("lh_transfer", **with_tip(self.channel, self.unknown, "cuvette", ul(sample_ul)))
        self.call("lh_mix", items=one(self.channel, "cuvette", ul(250)), cycles=8)
        self._drop()
        spectrum = self.call("spec_measure_absorbance", scans=10)
        full = self.lab.data(spectrum["data"])
        cuvette_um = spectrum["peak_absorbance"] / TARTRAZINE_EPSILON * 1e6  # 1 cm path
        return {**spectrum, "full": full}, cuvette_um * (blank_ul + sample_ul) / sample_ul


def _plate_wells(unknown_columns: int) -> list[str]:
    """The wells in use: the standards and blanks, and the unknown's first columns."""
    standards = [f"{r}{c}" for r in REPLICATE_ROWS for c in range(1, STEPS + 2)]
    unknowns = [f"{r}{c}" for r in UNKNOWN_ROWS for c in range(1, unknown_columns + 1)]
    return standards + unknowns


def _brief(arguments: dict[str, Any]) -> str:
    parts = []
    for key, value in arguments.items():
        if isinstance(value, dict) and set(value) == {"value", "unit"}:
            text = f"{value['value']:g} {value['unit']}"
        elif isinstance(value, list) and len(value) > 4:
            text = f"[{len(value)} items]"
        else:
            text = repr(value)
        parts.append(f"{key}={text}")
    return ", ".join(parts)


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
