"""T1 — mix the stock dyes to match a target absorbance spectrum.

Hidden truth per seed: a recipe, two or three of the four food-dye stocks (µL of each in a
200 µL well), and what the stocks really hold. The agent is given the recipe's noise-free,
water-referenced absorbance at 400–700 nm (10 nm steps) in a 200 µL Corning 96 flat well,
computed from the stocks' real contents, as this lab's reader measures it (its photometric
gain, ±0.6 %: a reference read on the lab's own instrument, as a colour is matched against a
physical sample); never the recipe. It mixes in plate wells and submits one well. Given the
true spectrum instead, no measurement could earn the score: the reward's 0.01 OD scale is
finer than the reader's accuracy, and the expert's score followed the hidden gain (0.81 on a
reader 0.47 % low against 0.99 at no error, seeds 0-11).

Only measuring earns the score. Inverting the noise-free target is the task's core, so the
stocks must not be computable: they are food-grade lots dissolved as supplied
(``colour_matching.toml``), labelled with the concentration as weighed and the specification's
dye content (85–95 %); each lot's real dye content and weighing error, and each dye batch's ε
and band positions (``species.toml``), are drawn per seed, and every pipetting channel has its
own bias. Inverting the target with the species library, the labels (the middle of the stated
dye content) and the nominal path length, and pipetting once, lands 1–7 % off in each dye
(0.006–0.07 OD RMSE); the scale below keeps it near 0.15 normalised, while reading the stocks
and the mix and topping it up lands within 0.008 OD.

Reward from the world's truth, not from readings: the submitted well's real contents give their
noise-free absorbance at the same wavelengths over the true path they fill in the target's well
(:data:`TARGET_WELL`: the table, the meniscus, that plate's path scale), so the liquid is judged
wherever it was mixed; raw = exp(−(RMSE / s)²) against the target. Validity: the well holds
150–250 µL.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any

import numpy as np
from typing_extensions import TypedDict

from labtools.demo.labels import label_micromolar
from labtools.drivers.pylabrobot.plr import cor_96_wellplate_360uL_Fb
from labtools.errors import UnknownResource, brief
from labtools.instruments.liquid_handler import TipPolicy
from labtools.lab import Lab
from labtools.session import Anchors, Budget, Session, Task
from labtools.simulators.plate_reading.layout import build_layout
from labtools.simulators.tasks.offers import ABSORBANCE, LIQUID
from labtools.simulators.tasks.rubrics import RUBRICS
from labtools.simulators.tasks.scripting import (
    Call,
    batch,
    caller,
    nm,
    nnls,
    nominal_path_cm,
    short_of_path,
    site_of,
    water_band,
)
from labtools.simulators.world import Mixture, SpeciesLibrary, World
from labtools.tool import Arg, tool

__all__ = [
    "ColourMatching",
    "absorbance_in_well",
    "nominal_basis",
    "submitted_well",
    "target_of",
]

DYES = ("tartrazine", "sunset_yellow", "allura_red", "brilliant_blue")
STOCKS = {
    "tartrazine": "reservoir:A2",
    "sunset_yellow": "reservoir:A3",
    "allura_red": "reservoir:A4",
    "brilliant_blue": "reservoir:A5",
}
WATER = "reservoir:A1"
PLATES = ("plate_1", "plate_2")
WAVELENGTHS_NM = np.arange(400.0, 701.0, 10.0)
WELL_UL = 200.0  # the target's volume
VALID_UL = (150.0, 250.0)  # the submitted well's real volume must lie here
#: µL of stock per 200 µL in a recipe: 8–40 µL gives each dye 0.3–1.5 OD at its peak in the
#: well (500 µM yellows and reds, 100 µM blue), every volume well inside a 300 µL tip's range
RECIPE_UL = (8.0, 40.0)
#: a recipe whose summed spectrum peaks above this (OD) is scaled down to it: the target then
#: reads within a plate reader's accurate range (physics reference §4: best below ~2 OD)
PEAK_MAX_OD = 1.8
#: the score's scale s: an RMSE of s costs a factor e^−1, of 2s e^−4. 0.01 OD is the plate
#: reader's photometric accuracy (±1.0 % ±0.010 OD, Synergy HT [physics reference §4]): a mix
#: the reader cannot tell from the target keeps at least e^−1. A careful protocol (stock
#: spectra, a fit, the mix read and topped up: :meth:`ColourMatching.expert`) lands at
#: 0.003 OD on average and within 0.008 OD on evaluation seeds 0–49 (0.5–1 % of each dye); the
#: Gaussian form leaves it near 1 and takes nearly all from a mix a few per cent off in its
#: dyes (0.02–0.05 OD), what an unmeasured inversion of the target makes
SCALE_OD = 0.01
#: µL of each stock in its 200 µL working dilution (1:10, ≈ 0.75 OD at the dye's peak): its
#: spectrum is the fit's basis, and it tops the mix up by volumes ten times those of stock,
#: whose absolute pipetting error (≈ 0.1–0.2 µL) then weighs a tenth as much
BASIS_UL = 20.0
DILUTION_FACTOR = WELL_UL / BASIS_UL
#: µL of brilliant blue stock (100 µM) in the opaque well: > 6 OD over 600–660 nm, so the reader
#: sees only its stray light there (its ceiling, −log10 s ≈ 3.3–4 OD: physics reference §4)
OPAQUE_UL = 300.0
OPAQUE_POINTS = 4  # the opaque well's highest readings averaged for the ceiling
#: the first mix holds (1 − MARGIN) of each fitted volume less MARGIN_UL: a channel's bias
#: (SD ≈ 0.5 µL) and the reading's errors then leave every dye short rather than in excess (a
#: top-up cannot take dye out), and the top-ups add what is missing
MARGIN = 0.05
MARGIN_UL = 1.0
TOP_UPS = 2  # read, top up; read, top up
#: the mix never grows past this (µL): a reading that asks for more is a defect well (a bubble
#: or a meniscus defect shortens its path: 2.4 % of wells, the published profile) or a mistake,
#: not a shortfall, and the well must stay valid (150–250 µL)
MIX_MAX_UL = 220.0
DILUTION_WELLS = tuple(f"plate_1:A{i + 1}" for i in range(len(DYES)))  # one per dye, in order
OPAQUE_WELL = "plate_1:A5"
MIX_WELL = "plate_1:A6"
#: where the expert mixes: the first of these whose water shows a sound path
MIX_WELLS = (MIX_WELL, "plate_1:A7", "plate_1:A8")
#: the well the target spectrum is computed in (its plate's true path: the table, meniscus and
#: offset, the plate's path scale)
TARGET_WELL = "plate_1:A1"
#: peak wavelengths (nm) a chemist looks up for the naive protocol [physics reference §8]
LITERATURE_PEAK_NM = {
    "tartrazine": 426.0,
    "sunset_yellow": 482.0,
    "allura_red": 504.0,
    "brilliant_blue": 630.0,
}
#: a well of the plates, matched whole (``fullmatch``: no trailing newline slips through)
_WELL = re.compile(rf"({'|'.join(PLATES)}):[A-H](1[0-2]|[1-9])")
_TARGET = re.compile(r"\{[^{}]*\}")
_CONTENT = re.compile(r"dye content (\d+)-(\d+) %")
#: one transfer of a batch: source, destination, µL
Move = tuple[str, str, float]


class Submitted(TypedDict):
    received: bool
    well: str


class ColourMatching(Task):
    id = "colour_matching"
    #: the virtual lab with food-grade dye stocks (their dye content drawn per seed)
    config = "labtools.simulators:colour_matching.toml"
    lab_tools = LIQUID | ABSORBANCE
    title = "Mix the stock dyes to match a target absorbance spectrum"
    budget = Budget(calls=120, tips=40, reagent_ul=3000, wells=24, hours=4)
    #: mean raw scores of naive() and expert() over calibration seeds 1000–1049, measured with
    #: labtools.session.evaluate.calibrate (`labtools eval --calibrate`)
    anchors = Anchors(naive=0.0, expert=0.9872, seeds="1000-1049")
    #: process components of the reward (labtools.simulators.tasks.rubrics)
    rubric = RUBRICS["colour_matching"]

    def __init__(self) -> None:
        super().__init__()
        self._target: np.ndarray = np.zeros(WAVELENGTHS_NM.size)

    def prepare(self, lab: Lab, seed: int) -> None:
        self._target = self._spectrum(
            lab, _mixture(lab.shared["world"], self.recipe(lab)), TARGET_WELL
        )

    def recipe(self, lab: Lab) -> dict[str, float]:
        """The hidden recipe: µL of each dye's stock per 200 µL, scaled down if needed so that
        the target peaks at no more than :data:`PEAK_MAX_OD`. For trainers and tests only."""
        world: World = lab.shared["world"]
        drawn = world.hidden("task/colour_matching", _draw_recipe)
        peak = float(self._spectrum(lab, _mixture(world, drawn), TARGET_WELL).max())
        scale = min(1.0, PEAK_MAX_OD / peak)
        return {dye: volume * scale for dye, volume in drawn.items()}

    def statement(self, lab: Lab) -> str:
        gain = 1.0 + lab.shared["reader_backend"].truth.gain_error  # the reader's scale
        target = {
            f"{w:g}": round(float(a) * gain, 4)
            for w, a in zip(WAVELENGTHS_NM, self._target, strict=True)
        }
        return (
            "Mix the stock dyes to reproduce a target colour. Stocks in the reservoir (labels "
            "in lh_get_deck): tartrazine (reservoir:A2), sunset yellow FCF (A3), allura red AC "
            "(A4), brilliant blue FCF (A5) and water (A1). The target is a 200 µL mix of some "
            "of these stocks and water in a well of plate_1 (Corning 96 flat); its absorbance "
            "as this lab's plate reader measures it (OD of the liquid alone, referenced to "
            "water, without noise or stray light) at each wavelength in nm is:\n"
            f"{json.dumps(target)}\n"
            "Prepare your mix in a well of plate_1 or plate_2 (keep 150–250 µL in it), check "
            "it with the plate reader as you like, then submit the well with "
            "submit_colour_matching. Reward: how closely the submitted well's real absorbance "
            "spectrum matches the target."
        )

    @tool(name="submit_colour_matching", destructive=True)
    async def submit(
        self,
        well: Annotated[
            str, Arg("The well holding your mix, as '<plate>:<well>', e.g. 'plate_1:B3'.")
        ],
    ) -> Submitted:
        """Submit the well whose contents best match the target. Ends the episode."""
        self.submission = {"well": submitted_well(well)}
        return {"received": True, "well": well}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        well = self.submission["well"]
        contents = lab.shared["world"].peek(well)
        realised = self._spectrum(lab, contents, TARGET_WELL)  # the liquid, in the target's well
        rmse = float(np.sqrt(np.mean((realised - self._target) ** 2)))
        return {
            "raw": math.exp(-((rmse / SCALE_OD) ** 2)),
            "rmse_od": rmse,
            "volume_ul": contents.volume_ul,
        }

    def validity(self, lab: Lab) -> float:
        if self.submission is None:
            return 1.0
        volume = lab.shared["world"].peek(self.submission["well"]).volume_ul
        return 1.0 if VALID_UL[0] <= volume <= VALID_UL[1] else 0.0

    def _spectrum(self, lab: Lab, mix: Mixture, well: str) -> np.ndarray:
        """Noise-free absorbance of ``mix`` over its true path in ``well`` (``plate:well``),
        water's own absorbance taken off (OD at :data:`WAVELENGTHS_NM`)."""
        return absorbance_in_well(lab, mix, well)

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """Read the empty wells (each well's own optical offset). Make each stock's 1:10
        working dilution and an opaque well of brilliant blue stock, and read them: the
        dilutions' spectra are the fit's basis; the opaque well gives the reader's stray
        light, which every reading is corrected for. Fit the target by non-negative least
        squares; mix a little less of each stock than the fit asks; then, twice, read the mix
        and top it up from the working dilutions by what the reading shows missing
        (non-negative least squares again). Read the final mix, then submit it. The mix well
        is checked first: its water's near-infrared band against the dilutions'; a well short
        of path (a defect: no reading there gives the mix's colour to 1 %) is left with its
        water, and the next well taken."""
        call = caller(session)
        target = target_of(session.observation()["task"])
        home = site_of(call("lh_get_deck"), "plate_1")
        empty = _measure(call, [*DILUTION_WELLS, OPAQUE_WELL, *MIX_WELLS])
        working, stray, per_cm = _working_dilutions(call, home, empty)
        volumes = nnls(working * DILUTION_FACTOR, target)  # µL of each stock
        first = np.maximum(volumes * (1.0 - MARGIN) - MARGIN_UL, 0.0)
        first[first < 1.0] = 0.0  # below the tip's smallest volume: left to the top-ups
        topped = DILUTION_FACTOR * float((volumes - first).sum())  # µL the top-ups should add
        water = WELL_UL - topped - float(first.sum())
        well = _sound_well(call, home, water, per_cm)
        moves = _stocks(first, well)
        _pipette(call, home, moves, tips="new")
        volume = water + sum(v for *_, v in moves)
        for _ in range(TOP_UPS):
            reading = _measure(call, [well])[well]
            now = _made_up(_liquid(reading, empty[well], stray), volume)
            moves = _top_up(working, target - now, MIX_MAX_UL - volume, well)
            if not moves:
                break
            _pipette(call, home, moves, tips="new")
            volume += sum(v for *_, v in moves)
        else:
            _measure(call, [well])  # the mix as submitted, checked
        call("submit_colour_matching", well=well)

    def naive(self, session: Session) -> None:
        """Equal parts of the two dyes whose literature peaks lie nearest the target's peak,
        mixed once and submitted unread."""
        call = caller(session)
        target = target_of(session.observation()["task"])
        peak = float(WAVELENGTHS_NM[int(np.argmax(target))])
        nearest = sorted(DYES, key=lambda d: abs(LITERATURE_PEAK_NM[d] - peak))[:2]
        volumes = np.array([20.0 if dye in nearest else 0.0 for dye in DYES])
        call("lh_transfer", **_batch(_mix(volumes, "plate_1:A1", WELL_UL), tips="new"))
        call("submit_colour_matching", well="plate_1:A1")

    def prior(self, session: Session) -> None:
        """Shortcut: the recipe prior's mean, unread: each dye at its mean volume in a recipe
        (two or three of four dyes, 8–40 µL each: 15 µL), mixed once and submitted."""
        call = caller(session)
        mean_ul = 2.5 / len(DYES) * sum(RECIPE_UL) / 2.0
        volumes = np.full(len(DYES), mean_ul)
        call("lh_transfer", **_batch(_mix(volumes, "plate_1:A1", WELL_UL), tips="new"))
        call("submit_colour_matching", well="plate_1:A1")

    def inversion(self, session: Session) -> None:
        """Shortcut: the target inverted without a reading: each stock's spectrum from the
        species library, its label's concentration and the nominal path of 200 µL in a Corning
        96 flat well; the volumes by non-negative least squares, mixed once and submitted."""
        call = caller(session)
        target = target_of(session.observation()["task"])
        labels = call("lh_get_deck")["labels"]
        basis = nominal_basis({dye: _stated_um(labels[STOCKS[dye]]) for dye in DYES})
        volumes = nnls(basis, target)
        volumes[volumes < 1.0] = 0.0  # below the tip's smallest volume
        call("lh_transfer", **_batch(_mix(volumes, MIX_WELL, WELL_UL), tips="new"))
        call("submit_colour_matching", well=MIX_WELL)


def submitted_well(well: object) -> str:
    """``well`` if it names a well of :data:`PLATES` (``plate_1:A1`` … ``plate_2:H12``), else
    refused (field ``/well``)."""
    if not isinstance(well, str) or _WELL.fullmatch(well) is None:
        raise UnknownResource(
            f"{brief(well)} is not a well of plate_1 or plate_2",
            field="/well",
            hint="name a well as 'plate_1:A1' … 'plate_2:H12'",
        )
    return well


def absorbance_in_well(
    lab: Lab, mix: Mixture, well: str, nm: np.ndarray = WAVELENGTHS_NM
) -> np.ndarray:
    """Noise-free absorbance of ``mix`` over the true path it fills in ``well``
    (``plate:well``: the height-volume table, the meniscus, that plate's path spread), water's
    own absorbance taken off (OD at ``nm``): how the lab's reader would read the liquid, before
    its gain, noise and stray light. Hidden truth, for scoring."""
    if mix.volume_ul <= 0.0:
        return np.zeros(np.shape(nm))
    plate, _, name = well.partition(":")
    resource = lab.shared["deck"].deck.get_resource(plate)
    backend = lab.shared["reader_backend"]
    path = float(backend.path_cm(resource, np.array([mix.volume_ul]), [resource[name][0]])[0])
    species = lab.shared["world"].species
    water = Mixture(mix.volume_ul).absorbance(nm, path, species)
    return mix.absorbance(nm, path, species) - water


def target_of(statement: str) -> np.ndarray:
    """The target spectrum (OD at :data:`WAVELENGTHS_NM`) as the statement gives it."""
    match = _TARGET.search(statement)
    if match is None:
        raise ValueError("the statement holds no target spectrum")
    target = json.loads(match.group())
    return np.array([float(target[f"{w:g}"]) for w in WAVELENGTHS_NM])


def nominal_basis(stock_um: dict[str, float]) -> np.ndarray:
    """Each stock's absorbance per µL in a 200 µL Corning 96 flat well (OD/µL, wavelengths ×
    dyes in :data:`DYES` order) from the species library's spectra and the stocks' stated
    concentrations (µM): what the package says, no measurement."""
    plate = cor_96_wellplate_360uL_Fb(name="nominal")
    path = float(build_layout(plate, "cross_section").path_cm(np.array([WELL_UL]))[0])
    library = SpeciesLibrary.default()
    columns = [
        library[dye].absorptivity(WAVELENGTHS_NM) * stock_um[dye] * 1e-6 * path / WELL_UL
        for dye in DYES
    ]
    return np.column_stack(columns)


def _stated_um(label: str) -> float:
    """The dye concentration (µM) a stock's label implies: its nominal value times the middle
    of the dye content it states (1 if it states none)."""
    content = _CONTENT.search(label)
    middle = (float(content[1]) + float(content[2])) / 200.0 if content else 1.0
    return label_micromolar(label) * middle


def _draw_recipe(rng: np.random.Generator) -> dict[str, float]:
    """Two or three of the dyes, each a uniform volume of stock (µL per 200 µL)."""
    count = int(rng.integers(2, 4))
    chosen = sorted(rng.choice(len(DYES), size=count, replace=False))
    return {DYES[i]: float(rng.uniform(*RECIPE_UL)) for i in chosen}


def _mixture(world: World, recipe: dict[str, float]) -> Mixture:
    """The recipe made without error: its volumes of the stocks' real contents, topped up with
    water to 200 µL."""
    mix = Mixture(WELL_UL - sum(recipe.values()))
    for dye, volume in recipe.items():
        stock = world.peek(STOCKS[dye])
        mix.add(Mixture.solution(volume, {dye: stock.concentration(dye)}))
    return mix


def _batch(moves: list[Move], tips: TipPolicy) -> dict[str, Any]:
    """``lh_transfer`` arguments: ``moves`` in order on channel 0, so that every volume of a
    stock, dilution and mix comes from the same channel."""
    return batch(moves, tips, channels=[0])


def _pipette(call: Call, home: str, transfers: list[Move], tips: TipPolicy) -> None:
    """Bring plate_1 back to ``home`` from the reader and run ``transfers``."""
    call("lh_move_plate", plate="plate_1", destination=home)
    call("lh_transfer", **_batch(transfers, tips))


def _mix(volumes: np.ndarray, well: str, total: float) -> list[Move]:
    """Water to ``total`` µL, then ``volumes`` (µL, in :data:`DYES` order) of the stocks."""
    water = total - float(volumes.sum())
    moves = [(WATER, well, water)] if water >= 1.0 else []
    return moves + _stocks(volumes, well)


def _stocks(volumes: np.ndarray, well: str) -> list[Move]:
    """``volumes`` (µL, in :data:`DYES` order) of the stocks into ``well``."""
    return [(STOCKS[dye], well, float(v)) for dye, v in zip(DYES, volumes, strict=True) if v > 0]


def _sound_well(call: Call, home: str, water_ul: float, per_cm: float) -> str:
    """The first of :data:`MIX_WELLS` whose path, once it holds ``water_ul`` of water, is no
    defect's (:func:`_path_factor`); the last one if none is."""
    for well in MIX_WELLS:
        _pipette(call, home, [(WATER, well, water_ul)], tips="new")
        call("lh_move_plate", plate="plate_1", destination="reader")
        band = _water_band(call, [well])[well]
        if _path_factor(band / nominal_path_cm(water_ul), per_cm) == 1.0:
            break
    return well


def _measure(call: Call, wells: list[str]) -> dict[str, np.ndarray]:
    """Move plate_1 into the reader and read the spectra of ``wells`` ('plate_1:A1', …) at
    :data:`WAVELENGTHS_NM` (OD)."""
    call("lh_move_plate", plate="plate_1", destination="reader")
    data = call(
        "reader_read_absorbance_spectrum",
        plate="plate_1",
        wells=[w.partition(":")[2] for w in wells],
        start=nm(WAVELENGTHS_NM[0]),
        stop=nm(WAVELENGTHS_NM[-1]),
        step=nm(10),
    )
    return {f"plate_1:{w}": np.array(v, dtype=float) for w, v in data["values"].items()}


def _working_dilutions(
    call: Call, home: str, empty: dict[str, np.ndarray]
) -> tuple[np.ndarray, float, float]:
    """Make the working dilutions (:data:`DILUTION_WELLS`, in :data:`DYES` order) and the opaque
    well, and read them: each dilution's absorbance per µL of it (OD/µL, wavelengths × dyes,
    over its own path where it is a defect), the reader's stray-light fraction, and the water
    band per cm of the table's path (the dilutions' median: the plate's sound wells)."""
    water = [(WATER, well, WELL_UL - BASIS_UL) for well in DILUTION_WELLS]
    stocks = [(STOCKS[d], well, BASIS_UL) for d, well in zip(DYES, DILUTION_WELLS, strict=True)]
    opaque = (STOCKS["brilliant_blue"], OPAQUE_WELL, OPAQUE_UL)
    _pipette(call, home, [*water, *stocks, opaque], tips="per_source")
    read = _measure(call, [*DILUTION_WELLS, OPAQUE_WELL])
    stray = _stray_light(read[OPAQUE_WELL])
    band = _water_band(call, list(DILUTION_WELLS))
    path = nominal_path_cm(WELL_UL)
    per_cm = float(np.median([band[w] for w in DILUTION_WELLS])) / path
    working = [
        _liquid(read[well], empty[well], stray) / WELL_UL / _path_factor(band[well] / path, per_cm)
        for well in DILUTION_WELLS
    ]
    return np.column_stack(working), stray, per_cm


def _water_band(call: Call, wells: list[str]) -> dict[str, float]:
    """:func:`~.scripting.water_band` of ``wells`` (``plate_1:<well>``) of plate_1."""
    bands = water_band(call, "plate_1", [w.partition(":")[2] for w in wells])
    return {w: bands[w.partition(":")[2]] for w in wells}


def _path_factor(band_per_cm: float, sound_per_cm: float) -> float:
    """A well's path over the table's: its water band per cm of the table's path against the
    sound wells'; 1 unless it is a defect (:func:`~.scripting.short_of_path`)."""
    ratio = band_per_cm / sound_per_cm
    return ratio if short_of_path(ratio) else 1.0


def _made_up(od: np.ndarray, volume_ul: float) -> np.ndarray:
    """``od`` of a mix read at ``volume_ul``, as it will read made up to :data:`WELL_UL`: the
    same dye spread into more liquid over a taller column. The wells taper, so the liquid's
    height is not proportional to its volume: it comes from the plate's own height–volume
    table (PyLabRobot's Corning 96 flat-bottom definition, labware data, not a measurement),
    less the published path offset (the meniscus: 1 % at 140 µL, the volume of a first mix)."""
    return od * (volume_ul / WELL_UL) * (nominal_path_cm(WELL_UL) / nominal_path_cm(volume_ul))


def _top_up(working: np.ndarray, missing: np.ndarray, room_ul: float, well: str) -> list[Move]:
    """Transfers of the working dilutions into ``well`` that best make up ``missing`` (OD at
    :data:`WAVELENGTHS_NM`), none in excess, scaled down to fit ``room_ul`` µL; volumes below
    the tip's 1 µL left out."""
    volumes = nnls(working, missing)  # µL of each working dilution
    total = float(volumes.sum())
    if total > room_ul:
        volumes = volumes * max(room_ul, 0.0) / total
    return [
        (dilution, well, float(v))
        for dilution, v in zip(DILUTION_WELLS, volumes, strict=True)
        if v >= 1.0
    ]


def _stray_light(opaque: np.ndarray) -> float:
    """The reader's stray-light fraction s from an opaque well's spectrum: where no light
    gets through the liquid, the reading is −log10(s / (1 + s)); the top readings' mean. A
    well read over-range (NaN) puts the ceiling above the reader's range: s is then too small
    to correct for (0)."""
    if not np.all(np.isfinite(opaque)):
        return 0.0
    ceiling = float(np.mean(np.sort(opaque)[-OPAQUE_POINTS:]))
    transmitted = 10.0**-ceiling
    return transmitted / (1.0 - transmitted)


def _liquid(reading: np.ndarray, empty: np.ndarray, stray: float) -> np.ndarray:
    """The liquid's absorbance (OD): the well's reading less its empty reading, each first
    corrected for stray light s (T = T_read · (1 + s) − s). Water absorbs nothing measurable
    at 400–700 nm: this is the dyes' absorbance."""

    def true_od(od: np.ndarray) -> np.ndarray:
        return -np.log10(10.0**-od * (1.0 + stray) - stray)

    return true_od(reading) - true_od(empty)
