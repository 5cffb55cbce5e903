"""The ``kinetics`` family: an enzyme's Michaelis constant and turnover number per labelled
active site, with their uncertainties, from the product the plate reader reads.

Structures: ``<pair>`` or ``<pair>+<absorber>`` over :data:`~.kinetics_parts.PAIRS` (alkaline
phosphatase with pNPP, chymotrypsin with Suc-AAPF-pNA, β-galactosidase with ONPG,
acetylcholinesterase with acetylthiocholine and DTNB: ``kinetics.toml``'s ``[assay.*]``) and
the analytes that colour the enzyme preparation at the pair's read wavelength
(:func:`~.kinetics_parts.absorbers`). Levels (:data:`~.kinetics_parts.LEVEL`) set the enzyme
stock's activity (near detection at level 5), how far above the published Km the substrate
stock reaches (2.5 × at level 5), the preparation's colour, the reader's noise and the budget.

Hidden truth per seed: the enzyme's Km and kcat per site, log-uniform within the pair's
published spans; the lot's activity (active sites per labelled site, log-normal with the
pair's spread); the day's factors on both (``kinetics.toml``); the product's absorptivity in
the assay medium (the library's × a factor with its published values' spread) and, for a
two-form product, its apparent pKa; the buffer's real pH (its label ± 0.02); the substrate's
and the standard's real concentrations (±1 %); the absorber's amount; the instruments. What is
scored is what the wells run on: Km, and kcat × the lot's activity per labelled site (Vmax over
the labelled enzyme). Only a measurement reveals them; only a product standard read in the
plate, in the assay buffer, turns the product's optical density into molar without the
library's ε and the nominal path (:meth:`KineticsTask.no_controls`).

Reward: raw = exp(−(CRPS_Km + CRPS_kcat) / :data:`SCALE`), each the CRPS of the normal
N(ln x̂, (σ̂/x̂)²) against ln x (a strictly proper score of the estimate and its uncertainty, on
the log scale where Km and kcat err), times the process rubric (a blank, a product standard
curve, a no-enzyme control, replicate reaction wells), weight :data:`PROCESS_WEIGHT`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, Any, ClassVar

import numpy as np

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.errors import OutOfRange
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import Component, Episode, Rubric, blanks, levels, replicates
from labtools.simulators.families.equilibrium_parts import BUFFER_PH_SD, real_buffer_ph
from labtools.simulators.families.kinetics_parts import (
    ENZYME_MAX_UL,
    LEVEL,
    WELL_UL,
    KineticsLevel,
    Pair,
    held_out,
    label_text,
    labels,
    pair,
    parse,
    structures,
    temperature_prior,
)
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.task import STOCK_UL, WASTE, WATER, FamilyTask
from labtools.simulators.families.task import log_uniform as draw_log_uniform
from labtools.simulators.tasks.enzyme_kinetics import (
    MEDIAN_KCAT_PER_S,
    WELL_SPAN,
    KineticsLimits,
    positive_value,
)
from labtools.simulators.tasks.offers import ENDPOINT, KINETIC, LIQUID, TEMPERATURE
from labtools.simulators.tasks.scripting import caller, nominal_path_cm
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.simulators.world import Mixture, SpeciesLibrary
from labtools.simulators.world.kinetics import KineticsData
from labtools.tool import Arg, tool
from labtools.units import Concentration, RateConstant, magnitude, qty

__all__ = ["SCALE", "HeatedKineticsTask", "Kinetics", "KineticsTask", "rubric"]

#: the reservoir: water, the assay buffer, the substrate, the product standard, the enzyme
BUFFER, SUBSTRATE, STANDARD, ENZYME = (f"reservoir:A{i}" for i in range(2, 6))
CONTAINERS = {
    "water": WATER,
    "buffer": BUFFER,
    "substrate": SUBSTRATE,
    "standard": STANDARD,
    "enzyme": ENZYME,
}
#: the score's scale in ln units [A: half enzyme_kinetics' τ = 0.3 (a CRPS grows with the error,
#: not its square): a term keeps 0.89 for an estimate honestly within 3 % (the expert's at level
#: 1), 0.15-0.3 for the package's published spans (0.25-0.5 in ln); at 0.1 the expert's level 5
#: runs fell under half their mean on 5-8 of 60 seeds]
SCALE = 0.15
#: the process's share of the outcome, as the other families'
PROCESS_WEIGHT = 0.6
#: the labelled buffer's strength (µM) [A: as the library's buffers]
BUFFER_UM = 100_000.0


# -- the rubric --------------------------------------------------------------------------------
def no_enzyme(episode: Episode) -> float:
    """1 if the substrate was read over time (a kinetic read) in a well without the enzyme:
    its own hydrolysis and the baseline it sets, else 0."""
    for reading in episode.of([SUBSTRATE], "kinetic"):
        if not reading.holds([ENZYME]):
            return 1.0
    return 0.0


def rubric(conditions: int, replicates_doc: str, note: str) -> Rubric:
    """The enzyme families' process: a blank, the product standard at three levels without
    enzyme, the substrate's own hydrolysis, and the reaction at ``conditions`` conditions in
    duplicate (``replicates_doc`` says which); weight :data:`PROCESS_WEIGHT`."""
    return Rubric(
        (
            Component(
                "blank",
                0.2,
                lambda e: blanks(e, [SUBSTRATE, ENZYME], [WATER, BUFFER]),
                "a buffer-only (or empty) well read on each plate with reactions",
            ),
            Component(
                "standards",
                0.3,
                lambda e: levels(e, STANDARD, count=3, lacks=[ENZYME]),
                "the product standard read at three or more levels without enzyme",
            ),
            Component(
                "no_enzyme",
                0.25,
                no_enzyme,
                "the substrate read over time without enzyme (its own hydrolysis, the baseline)",
            ),
            Component(
                "replicates",
                0.25,
                lambda e: replicates(e, [ENZYME], copies=2, conditions=conditions, mode="kinetic"),
                replicates_doc,
            ),
        ),
        weight=PROCESS_WEIGHT,
        note=note,
    )


RUBRIC = rubric(
    5,
    "five reaction conditions in duplicate or more",
    "The stated uncertainties are scored by the outcome itself (CRPS, strictly proper).",
)


# -- the task ----------------------------------------------------------------------------------
class KineticsTask(FamilyTask):
    """One instance of :class:`Kinetics` (its class attributes set by :meth:`Kinetics.build`)."""

    lab_tools = LIQUID | ENDPOINT | KINETIC

    rubric = RUBRIC
    limits = KineticsLimits()
    level: ClassVar[KineticsLevel]  # type: ignore[assignment]
    pair_key: ClassVar[str]
    absorber_key: ClassVar[str | None]

    @property
    def pair(self) -> Pair:
        return pair(self.pair_key)

    # -- the hidden world ----------------------------------------------------------------------
    def drawn(self, lab: Lab) -> dict[str, float]:
        """What this seed drew for the instance (reference constants, the lot, the product in
        the medium, the absorber)."""
        return dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))

    def truth(self, lab: Lab) -> dict[str, float]:
        """Km (M) and kcat per labelled site (s⁻¹) the wells run on, and what this seed drew
        (trainers and scoring only)."""
        world = lab.shared["world"]
        self._install(world)
        work = world.kinetics.at_work(self.pair.enzyme)
        return {
            "km_molar": float(work["km_molar"]),
            "kcat_per_s": float(work["kcat_per_s"]),
            **self.drawn(lab),
        }

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        p = self.pair
        product = SpeciesLibrary.default()[p.product]
        half_life_h = draw_log_uniform(rng, KineticsData.default().enzymes[p.enzyme].half_life_h)
        out = {
            "km_reference": draw_log_uniform(rng, p.km),
            "kcat_reference": draw_log_uniform(rng, p.kcat),
            "kd_per_s": math.log(2.0) / (half_life_h * 3600.0),
            "lot_activity": float(math.exp(p.lot_sd * rng.standard_normal())),
            "epsilon_factor": float(math.exp(p.epsilon_sd * rng.standard_normal())),
        }
        pka_shift = p.pka_sd * float(rng.standard_normal())  # drawn for every pair alike
        if product.pka is not None:
            out["product_pka"] = product.pka + pka_shift
        if self.absorber_key is not None:
            od = draw_log_uniform(rng, self.level.absorber_od)
            species = SpeciesLibrary.default()[self.absorber_key]
            epsilon = float(species.absorptivity(p.read_nm))
            share = ENZYME_MAX_UL / WELL_UL
            out["absorber_um"] = od / (epsilon * nominal_path_cm(WELL_UL) * share) * 1e6
        return out

    def _install(self, world: Any) -> None:
        """This seed's constants and lot into the kinetics engine's hidden truth, before the
        engine draws its own (``world.hidden`` keeps the first draw of a key)."""
        drawn = dict(world.hidden(f"task/{self.id}", self._draw))
        enzyme = self.pair.enzyme
        reference = {
            "km_molar": drawn["km_reference"],
            "kcat_per_s": drawn["kcat_reference"],
            "kd_per_s": drawn["kd_per_s"],
        }
        world.hidden(f"kinetics/{enzyme}", lambda rng: reference)
        world.hidden(f"kinetics/{enzyme}/lot", lambda rng: {"activity": drawn["lot_activity"]})

    def prepare(self, lab: Lab, seed: int) -> None:
        """The enzyme's truth into the engine; the product in the assay medium and the buffer's
        real pH into the world's library; the stocks into the reservoir, their labels on the
        deck."""
        world = lab.shared["world"]
        self._install(world)
        drawn = self.drawn(lab)
        p, library = self.pair, SpeciesLibrary.default()
        product = library[p.product].batch_of(drawn["epsilon_factor"], 0.0)
        if product.pka is not None:
            product = dataclasses.replace(product, pka=drawn["product_pka"])
        world.species.put(product)
        real_ph = world.hidden(f"species/{p.buffer}/ph", real_buffer_ph(p.ph))
        world.species.put(dataclasses.replace(library[p.buffer], ph=real_ph))
        molar = labels(p, self.level)
        shown = self.stock_labels()
        for container, key, amount in (
            (BUFFER, p.buffer, BUFFER_UM * 1e-6),
            (SUBSTRATE, p.substrate, molar["substrate"]),
            (STANDARD, p.product, molar["standard"]),
        ):
            world.fill_stock(
                {
                    "well": container,
                    "species": key,
                    "concentration_uM": amount * 1e6,
                    "volume_ul": STOCK_UL,
                    "tolerance": 0.01,
                    "label": shown[container],
                }
            )
        enzyme = {p.enzyme: molar["enzyme"]}
        if self.absorber_key is not None:
            enzyme[self.absorber_key] = drawn["absorber_um"] * 1e-6
        world.fill(ENZYME, Mixture.solution(STOCK_UL, enzyme), shown[ENZYME])
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update(shown)

    def stock_labels(self) -> dict[str, str]:
        """What each stock's label says (the level's figures, the published ones: never this
        seed's)."""
        p, molar = self.pair, labels(self.pair, self.level)
        buffer = SpeciesLibrary.default()[p.buffer].name.split(",")[0] + " (100 mM)"
        if p.product == "tnb":
            buffer += " with DTNB in excess"
        coloured = "" if self.absorber_key is None else ", a coloured preparation"
        return {
            BUFFER: f"assay buffer: {buffer}, pH {p.ph:.2f} ±{BUFFER_PH_SD:.2f}",
            SUBSTRATE: f"{p.name(p.substrate)} {label_text(molar['substrate'])} ±1 % in water",
            STANDARD: f"{p.name(p.product)} standard {label_text(molar['standard'])} ±1 % in water",
            ENZYME: f"{p.name(p.enzyme)} {label_text(molar['enzyme'])} active sites as "
            f"labelled (lot activity not stated{coloured})",
        }

    def statement(self, lab: Lab) -> str:
        p = self.pair
        coloured = ""
        if self.absorber_key is not None:
            coloured = (
                f" The enzyme preparation is coloured: it also holds "
                f"{analyte(self.absorber_key).name}, which absorbs at {p.read_nm:g} nm."
            )
        ellman = ""
        if p.product == "tnb":
            ellman = " Each thiocholine released reduces the buffer's DTNB to one TNB at once."
        return (
            f"Determine the Michaelis-Menten constants of {p.name(p.enzyme)} with "
            f"{p.name(p.substrate)} in the assay buffer at 25 °C (the room's): the Michaelis "
            "constant Km and the "
            "turnover number kcat per labelled active site (Vmax over the enzyme concentration "
            "its label states; the lot's real activity is not stated), each with its standard "
            f"uncertainty. The enzyme turns the colourless substrate into {p.name(p.product)}, "
            f"read at {p.read_nm:g} nm.{ellman}{coloured} The reservoir holds water ({WATER}), "
            f"the assay buffer ({BUFFER}), the substrate ({SUBSTRATE}), a standard of the "
            f"product ({STANDARD}) and the enzyme ({ENZYME}), a waste trough at {WASTE}; their "
            "labels (lh_get_deck) give the concentrations, the ± of the buffer's pH one "
            "standard deviation. lh_get_deck shows the deck: two 96-well plates, tip racks, "
            "the plate reader and a spectrometer. Reactions run while time passes: "
            "reader_read_absorbance_kinetic reads wells repeatedly. Submit once with "
            "submit_kinetics: Km and kcat with their standard uncertainties (one standard "
            "deviation, everything included). Reward: exp(-(CRPS_Km + CRPS_kcat) / "
            f"{SCALE}), each the continuous ranked probability score of a normal distribution "
            "on the log scale, N(ln estimate, (uncertainty / estimate)²), against ln of the "
            "truth, times how sound the experiment was (a blank, a product standard curve, a "
            "no-enzyme control, replicate reaction wells)."
        )

    @tool(name="submit_kinetics", destructive=True)
    async def submit(
        self,
        km: Annotated[Concentration, Arg("The Michaelis constant Km, > 0.", within="constant")],
        km_uncertainty: Annotated[
            Concentration, Arg("Km's standard uncertainty (one sd), ≥ 0.", within="constant")
        ],
        kcat: Annotated[
            RateConstant,
            Arg("The turnover number per labelled active site, > 0.", within="turnover"),
        ],
        kcat_uncertainty: Annotated[
            RateConstant, Arg("kcat's standard uncertainty (one sd), ≥ 0.", within="turnover")
        ],
    ) -> Submitted:
        """Submit Km and kcat with their standard uncertainties. Ends the episode."""
        values = {
            "km_molar": positive_value(magnitude(km, "molar"), "km", "M"),
            "kcat_per_s": positive_value(magnitude(kcat, "1 / second"), "kcat", "1/s"),
        }
        for name, given, unit in (
            ("km_uncertainty", magnitude(km_uncertainty, "molar"), "M"),
            ("kcat_uncertainty", magnitude(kcat_uncertainty, "1 / second"), "1/s"),
        ):
            if not (math.isfinite(given) and given >= 0.0):
                raise OutOfRange(
                    f"the {name} must be a finite number ≥ 0, not {given:g} {unit}",
                    field=f"/{name}",
                    hint="give one standard deviation, 0 or more",
                )
            values[name] = given
        self.submission = values
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        truth = self.truth(lab)
        out: dict[str, float] = {}
        total = 0.0
        for name, key in (("km", "km_molar"), ("kcat", "kcat_per_s")):
            guess = self.submission[key]
            sd = self.submission[f"{name}_uncertainty"] / guess
            crps = crps_normal(math.log(guess), sd, math.log(truth[key]))
            out[f"{name}_ratio"] = guess / truth[key]
            out[f"{name}_crps"] = crps
            total += crps
        return {"raw": math.exp(-total / SCALE), **out}

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.kinetics_expert.constants`: substrate levels in replicate with a blank,
        product standards, no-enzyme and enzyme-only wells, a pre-read, kinetic reads, a path
        check; rates from the progress curves, a weighted Michaelis-Menten fit."""
        from labtools.simulators.families.kinetics_expert import constants

        est = constants(caller(session), self.pair, CONTAINERS, wells=self.budget.wells)
        self._submit(session, *est)

    def naive(self, session: Session) -> None:
        """One well at the top substrate level with a tenth of the enzyme stock, one unblanked
        reading after 10 minutes at the read wavelength, converted with the library's ε at the
        product's peak over 1 cm, the enzyme taken as saturated; Km the published value; 10 %
        each as the uncertainty."""
        from labtools.simulators.families.kinetics_expert import endpoint_kcat

        kcat = endpoint_kcat(caller(session), self.pair, CONTAINERS)
        km = self.pair.km_centre
        self._submit(session, km, 0.1 * km, kcat, 0.1 * kcat)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; Km at the centre of the substrate levels the label allows in a
        well, kcat the median enzyme's, each ± itself."""
        from labtools.demo.labels import label_micromolar

        label = caller(session)("lh_get_deck")["labels"][SUBSTRATE]
        km = label_micromolar(label) * 1e-6 * math.sqrt(WELL_SPAN[0] * WELL_SPAN[1])
        self._submit(session, km, km, MEDIAN_KCAT_PER_S, MEDIAN_KCAT_PER_S)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the package's published figures (the spans' centres), ± the
        spreads the package states (the spans', the lot's)."""
        p = self.pair
        km_sd, kcat_sd = p.ln_spreads
        self._submit(
            session, p.km_centre, km_sd * p.km_centre, p.kcat_centre, kcat_sd * p.kcat_centre
        )

    def no_controls(self, session: Session) -> None:
        """Shortcut: :func:`~.kinetics_expert.uncontrolled`: the expert's substrate levels once
        each, no blank, standard, no-enzyme well, pre-read or replicate; rates converted with
        the library's ε (at the labelled pH) over the nominal path."""
        from labtools.simulators.families.kinetics_expert import uncontrolled

        self._submit(session, *uncontrolled(caller(session), self.pair, CONTAINERS))

    @staticmethod
    def _submit(session: Session, km: float, km_sd: float, kcat: float, kcat_sd: float) -> None:
        km = km if math.isfinite(km) and km > 0 else 1e-3
        kcat = kcat if math.isfinite(kcat) and kcat > 0 else MEDIAN_KCAT_PER_S
        km_sd = km_sd if math.isfinite(km_sd) and km_sd >= 0 else km
        kcat_sd = kcat_sd if math.isfinite(kcat_sd) and kcat_sd >= 0 else kcat
        caller(session)(
            "submit_kinetics",
            km=_six(min(km, 100.0) * 1e3, "millimolar"),
            km_uncertainty=_six(min(km_sd, 100.0) * 1e3, "millimolar"),
            kcat=_six(min(kcat, 1e8), "1 / second"),
            kcat_uncertainty=_six(min(kcat_sd, 1e8), "1 / second"),
        )


def _six(value: float, unit: str) -> Any:
    return qty(float(f"{value:.6g}"), unit)


class HeatedKineticsTask(KineticsTask):
    """A kinetics instance whose enzyme's temperature laws (Arrhenius turnover, Km's shift,
    unfolding: :func:`~.kinetics_parts.temperature_prior`'s spans) are drawn on top of its world,
    and whose agent may heat the reader's chamber (``arrhenius``, ``thermal``)."""

    lab_tools = LIQUID | ENDPOINT | KINETIC | TEMPERATURE

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        out = super()._draw(rng)
        out.update(temperature_prior(self.pair).draw(rng))
        return out

    def _install(self, world: Any) -> None:
        super()._install(world)
        drawn = dict(world.hidden(f"task/{self.id}", self._draw))
        keys = ("kcat_ea", "km_ratio_37", "residual_56", "unfolding_ea")
        thermal = {k: drawn[k] for k in keys}
        world.hidden(f"kinetics/{self.pair.enzyme}/temperature", lambda rng: thermal)


class Kinetics(LevelledFamily):
    """An enzyme's Km and kcat from the product it releases (:mod:`.kinetics`)."""

    id = "kinetics"
    title = "Determine an enzyme's Km and kcat per labelled site, with their uncertainties"
    members = ("enzyme_kinetics",)
    task = KineticsTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        p, absorber = parse(structure)
        title = f"Km and kcat of {p.name(p.enzyme)} with {p.name(p.substrate)}"
        if absorber is not None:
            title += f", the preparation coloured with {analyte(absorber).name}"
        return {
            "title": title,
            "pair_key": p.key,
            "absorber_key": absorber,
        }
