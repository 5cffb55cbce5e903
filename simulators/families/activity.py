"""The ``activity`` family: a new enzyme lot's activity in units per mL (1 U = 1 µmol of product
per minute) under a stated assay: the substrate at a stated level in the well, the assay
buffer, 25 °C (the room's). The quality-control question a lab asks of every new lot.

Structures: the ``kinetics`` family's (:func:`~.kinetics_parts.structures`): ``<pair>`` or
``<pair>+<absorber>``, the enzyme–substrate pairs of ``kinetics.toml``'s ``[assay.*]`` and the
analytes that colour the preparation at the pair's read wavelength; the same held-out species
and combination (:func:`~.kinetics_parts.held_out`).

Levels (:data:`LEVEL`, :class:`~.kinetics_parts.KineticsLevel`'s figures): harder levels hold a
more active stock (undiluted, its rates are never initial: the substrate is gone within
seconds to minutes), a stated substrate level nearer Km (not saturating: the answer is the
rate at that level, not Vmax, and hangs on the lot's Km), a more strongly coloured
preparation, a noisier reader and fewer wells.

Hidden truth per seed: the ``kinetics`` family's draw (:meth:`~.kinetics.KineticsTask._draw`):
Km and kcat per site within the pair's published spans, the lot's activity (sites active per
labelled site), the day's factors, the product's absorptivity in the assay medium (the
library's × a factor with its published spread; a two-form product's pKa) and the buffer's
real pH, the absorber's amount; and the instruments' own (the plate's path). What is scored:
kcat × [E] × S/(Km + S) the stock runs on at the stated S, per mL of stock. Only a product
standard read in the plate, in the assay buffer, turns the product's OD into µmol without the
library's ε and the nominal path (:meth:`ActivityTask.no_controls`).

Reward: raw = exp(−CRPS / :data:`SCALE`), the CRPS of N(ln Â, (σ̂/Â)²) against ln A (a strictly
proper score of the estimate and its uncertainty on the log scale), times the process rubric (a
blank, a product standard curve, a no-enzyme control, replicate reaction wells), weight
:data:`~.kinetics.PROCESS_WEIGHT`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from labtools.errors import OutOfRange
from labtools.lab import Lab
from labtools.session import Budget, Session, Submitted
from labtools.simulators.families.kinetics import (
    BUFFER,
    CONTAINERS,
    ENZYME,
    STANDARD,
    SUBSTRATE,
    KineticsTask,
    rubric,
)
from labtools.simulators.families.kinetics_parts import (
    SUBSTRATE_MAX_UL,
    WELL_UL,
    KineticsLevel,
    held_out,
    labels,
    parse,
    structures,
)
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.task import WASTE, WATER
from labtools.simulators.tasks.enzyme_kinetics import MEDIAN_KCAT_PER_S
from labtools.simulators.tasks.scripting import caller
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.simulators.world import SpeciesLibrary
from labtools.tool import Arg, tool
from labtools.units import Range

__all__ = ["LEVEL", "SCALE", "Activity", "ActivityLimits", "ActivityTask"]

#: the score's scale in ln units [A: an estimate honestly within 3 % (σ̂ = 3 %, the expert's)
#: keeps ~0.85; the published spans' centres (a lot's kcat known to a factor of 2-10) under
#: 0.1]
SCALE = 0.1
#: the product's absorptivity in this assay medium over what the package's library (and the
#: ``kinetics`` family's own lot spread) gives, sd of ln [A: 4 %; an absorptivity moves with the
#: medium's composition: p-nitroaniline's at 405-410 nm by several per cent with ionic strength
#: and additives [L: Lottenberg & Jackson 1983, Biochim. Biophys. Acta 742:558, recalled], TNB's
#: at 412 nm is 13,600 in Ellman 1959 and 14,150 M⁻¹ cm⁻¹ in Riddles et al. 1979 (4 % apart)
#: [L, recalled]]: only a standard read in the medium finds it
MEDIUM_SD = 0.04

#: each level [A], as :class:`~.kinetics_parts.KineticsLevel`: ``activity`` is the stock's OD
#: per minute at Vmax with 50 µL of it in a 200 µL well at the published constants (level 1's
#: already converts its substrate within minutes undiluted, level 5's within seconds); ``top``
#: is the stated substrate level over the published Km (8 × at level 1, near saturating; 1.5 ×
#: at level 5, where the rate is ~60 % of Vmax and a lot's Km moves it by up to a fifth);
#: ``absorber_od`` the preparation's colour in a well holding 50 µL of it (as the ``kinetics``
#: family's); the shared levels' noise; budgets that hold the expert's three doses in
#: triplicate with its controls and two dilution chains down to level 4, in duplicate at 5
LEVEL = {
    1: KineticsLevel(
        1, 0.5, 8.0, (0.05, 0.15), SHARED_LEVEL[1].noise, Budget(150, 96, 12_000, 96, 4.0)
    ),
    2: KineticsLevel(
        2, 1.5, 5.0, (0.1, 0.3), SHARED_LEVEL[2].noise, Budget(120, 64, 10_000, 64, 4.0)
    ),
    3: KineticsLevel(
        3, 5.0, 3.0, (0.2, 0.5), SHARED_LEVEL[3].noise, Budget(100, 48, 9000, 48, 3.0)
    ),
    4: KineticsLevel(
        4, 15.0, 2.0, (0.3, 0.8), SHARED_LEVEL[4].noise, Budget(80, 40, 8000, 32, 3.0)
    ),
    5: KineticsLevel(
        5, 40.0, 1.5, (0.5, 1.2), SHARED_LEVEL[5].noise, Budget(60, 32, 7000, 26, 3.0)
    ),
}


@dataclass(frozen=True)
class ActivityLimits:
    """Sane bounds of a submission (U/mL): far beyond any enzyme stock's (pure enzymes run to
    10⁴-10⁵ U/mg at 1-10 mg/mL [L: order of magnitude])."""

    activity: Range = Range(0.0, 1e9)


RUBRIC = rubric(
    3,
    "three amounts of the enzyme in duplicate or more, read over time",
    "The stated uncertainty is scored by the outcome itself (CRPS, strictly proper).",
)


class ActivityTask(KineticsTask):
    """One instance of :class:`Activity` (its class attributes set by :meth:`Activity.build`):
    the ``kinetics`` family's world and stocks, asked for the stock's activity."""

    rubric = RUBRIC
    limits = ActivityLimits()  # type: ignore[assignment]

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        """The ``kinetics`` family's draw, and the product's absorptivity in this medium
        (:data:`MEDIUM_SD`), drawn after it."""
        out = super()._draw(rng)
        out["medium_factor"] = float(math.exp(MEDIUM_SD * rng.standard_normal()))
        return out

    def prepare(self, lab: Lab, seed: int) -> None:
        """The ``kinetics`` family's world and stocks, the product's absorptivity in the
        medium on top of its lot's."""
        super().prepare(lab, seed)
        drawn = self.drawn(lab)
        factor = drawn["epsilon_factor"] * drawn["medium_factor"]
        product = SpeciesLibrary.default()[self.pair.product].batch_of(factor, 0.0)
        if product.pka is not None:
            product = dataclasses.replace(product, pka=drawn["product_pka"])
        lab.shared["world"].species.put(product)

    @property
    def substrate_molar(self) -> float:
        """The stated substrate level in the well (M): half the labelled stock."""
        return labels(self.pair, self.level)["substrate"] * SUBSTRATE_MAX_UL / WELL_UL

    def truth(self, lab: Lab) -> dict[str, float]:
        """The stock's activity (U/mL) at the stated substrate level, what the wells run on
        (Km, kcat per labelled site), and what this seed drew (trainers and scoring only)."""
        out = super().truth(lab)
        s = self.substrate_molar
        enzyme = labels(self.pair, self.level)["enzyme"]
        rate = out["kcat_per_s"] * enzyme * s / (out["km_molar"] + s)  # M/s in the stock
        out["activity_u_per_ml"] = rate * 60.0 * 1e3
        return out

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
            f"A new lot of {p.name(p.enzyme)} has arrived: determine its activity in units per "
            "mL of the stock (1 U = 1 µmol of product formed per minute) under the stated "
            f"assay: {p.name(p.substrate)} in the well at half its stock's labelled "
            "concentration (100 µL of the stock in a 200 µL reaction), in the assay buffer, at "
            "25 °C (the room's), with its "
            "standard uncertainty. Activity means the initial rate at that substrate level "
            "(which need not saturate the enzyme), per volume of the stock. The enzyme turns "
            f"the colourless substrate into {p.name(p.product)}, read at {p.read_nm:g} nm."
            f"{ellman}{coloured} The reservoir holds water ({WATER}), the assay buffer "
            f"({BUFFER}), the substrate ({SUBSTRATE}), a standard of the product ({STANDARD}) "
            f"and the enzyme stock ({ENZYME}), a waste trough at {WASTE}; their labels "
            "(lh_get_deck) give the concentrations, the ± of the buffer's pH one standard "
            "deviation. lh_get_deck shows the deck: two 96-well plates, tip racks, the plate "
            "reader and a spectrometer. Reactions run while time passes: "
            "reader_read_absorbance_kinetic reads wells repeatedly. Submit once with "
            "submit_activity: the activity in U/mL and its standard uncertainty (one standard "
            "deviation, everything included). Reward: exp(-CRPS / "
            f"{SCALE}), the continuous ranked probability score of a normal distribution on "
            "the log scale, N(ln estimate, (uncertainty / estimate)²), against ln of the "
            "truth, times how sound the experiment was (a blank, a product standard curve, a "
            "no-enzyme control, replicate reaction wells at more than one amount of enzyme)."
        )

    @tool(name="submit_activity", destructive=True)
    async def submit(  # type: ignore[override]
        self,
        activity: Annotated[
            float, Arg("The stock's activity in U/mL (µmol/min per mL), > 0.", within="activity")
        ],
        uncertainty: Annotated[
            float,
            Arg("Its standard uncertainty in U/mL (one sd), ≥ 0.", within="activity"),
        ],
    ) -> Submitted:
        """Submit the stock's activity and its standard uncertainty. Ends the episode."""
        if not (math.isfinite(activity) and activity > 0.0):
            raise OutOfRange(
                f"the activity must be a finite number > 0, not {activity:g} U/mL",
                field="/activity",
                hint="give a positive activity in U/mL",
            )
        if not (math.isfinite(uncertainty) and uncertainty >= 0.0):
            raise OutOfRange(
                f"the uncertainty must be a finite number ≥ 0, not {uncertainty:g} U/mL",
                field="/uncertainty",
                hint="give one standard deviation, 0 or more",
            )
        self.submission = {"activity": float(activity), "uncertainty": float(uncertainty)}
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        truth = self.truth(lab)["activity_u_per_ml"]
        guess = self.submission["activity"]
        crps = crps_normal(math.log(guess), self.submission["uncertainty"] / guess, math.log(truth))
        return {"raw": math.exp(-crps / SCALE), "ratio": guess / truth, "crps": crps}

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.activity_expert.activity`: two dilution chains, three doses in replicate, a
        blank, product standards, no-enzyme and colour wells, pre-reads, kinetic reads, a path
        check; initial rates under 10 % conversion per µL of stock, their weighted mean."""
        from labtools.simulators.families.activity_expert import activity

        est = activity(caller(session), self.pair, CONTAINERS, wells=self.budget.wells)
        self._submit_activity(session, *est)

    def naive(self, session: Session) -> None:
        """10 µL of the stock undiluted at the stated substrate level, one unblanked reading
        after 10 minutes over the library's ε at the product's peak and 1 cm; 10 % as the
        uncertainty."""
        from labtools.simulators.families.activity_expert import naive_endpoint

        value = naive_endpoint(caller(session), self.pair, CONTAINERS)
        self._submit_activity(session, value, 0.1 * value)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; the enzyme label's sites at the median enzyme's kcat,
        saturated, ± itself."""
        from labtools.demo.labels import label_micromolar

        label = caller(session)("lh_get_deck")["labels"][ENZYME]
        value = label_micromolar(label) * 1e-6 * MEDIAN_KCAT_PER_S * 60.0 * 1e3
        self._submit_activity(session, value, value)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the labelled sites at the package's published constants (the
        spans' centres) at the stated substrate level, ± the spreads the package states."""
        p, s = self.pair, self.substrate_molar
        enzyme = labels(p, self.level)["enzyme"]
        value = p.kcat_centre * enzyme * s / (p.km_centre + s) * 60.0 * 1e3
        km_sd, kcat_sd = p.ln_spreads
        sd = math.hypot(kcat_sd, km_sd * p.km_centre / (p.km_centre + s))
        self._submit_activity(session, value, sd * value)

    def no_controls(self, session: Session) -> None:
        """Shortcut: :func:`~.activity_expert.uncontrolled`: the expert's dilution, one well at
        the stated substrate level, one kinetic read, no blank, standard, no-enzyme well or
        replicate; the slope over the library's ε and the nominal path."""
        from labtools.simulators.families.activity_expert import uncontrolled

        self._submit_activity(session, *uncontrolled(caller(session), self.pair, CONTAINERS))

    @staticmethod
    def _submit_activity(session: Session, value: float, sd: float) -> None:
        value = value if math.isfinite(value) and value > 0 else 1.0
        sd = sd if math.isfinite(sd) and sd >= 0 else value
        caller(session)(
            "submit_activity",
            activity=float(f"{min(value, 1e8):.6g}"),
            uncertainty=float(f"{min(sd, 1e8):.6g}"),
        )


class Activity(LevelledFamily):
    """A new enzyme lot's activity in U/mL under a stated assay (:mod:`.activity`)."""

    id = "activity"
    title = "Determine an enzyme stock's activity in U/mL under a stated assay"
    task = ActivityTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        p, absorber = parse(structure)
        title = f"Activity (U/mL) of a {p.name(p.enzyme)} lot with {p.name(p.substrate)}"
        if absorber is not None:
            title += f", the preparation coloured with {analyte(absorber).name}"
        return {
            "title": title,
            "pair_key": p.key,
            "absorber_key": absorber,
        }
