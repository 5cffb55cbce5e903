"""The ``ic50`` family: a reversible inhibitor's IC50 at a stated substrate level, with its
standard uncertainty and the Hill slope, from a dose-response series the plate reader reads.

The ``inhibition`` family's world (:class:`~.inhibition.InhibitionTask`: its enzyme–substrate
pairs, coloured preparations, published inhibitors, hidden mechanism and Ki) asked a drug
discovery lab's first question. Structures: the ``inhibition`` family's
(``<pair>+<inhibitor>[+<absorber>]``), each stating the substrate in the well as a multiple of
the pair's published Km (:func:`~.ic50_parts.stated_substrate`, 0.3 × to 5 ×).

Hidden truth per seed: everything the ``inhibition`` family draws (the mechanism, Ki in its
published span with the day's factor, Km and kcat, the lot's activity, the product's
absorptivity, the stocks' ±1 %, the absorber's amount). Scored is the IC50 the wells run on:
Cheng–Prusoff (:func:`~.ic50_parts.cheng_prusoff`) from the mechanism, Ki and Km at work and
the stated substrate level; the Hill slope's truth is 1. The lot's activity and the product's
absorptivity cancel in a normalised response; what the controls earn is the curve's ends: the
0 % controls (no inhibitor) set its top, the 100 % controls (substrate without enzyme) its
bottom, the substrate's own hydrolysis that every well carries (acetylthiocholine's is a few
per cent of a weak enzyme's rate), and the duplicates with the path check keep a defect well
from being the one point an IC50 rests on. The one-point estimate without them
(:meth:`IC50Task.no_controls`) errs by the noise of one ratio, amplified where the package's
expected IC50 lies far from the truth (its mechanism is a coin toss, its Ki span tenfold).

Reward: raw = exp(−CRPS/:data:`SCALE`) · (1 − :data:`HILL_WEIGHT` + :data:`HILL_WEIGHT` ·
exp(−ln²(ĥ)/2 :data:`HILL_TAU`²)), the CRPS of N(ln IC50̂, (σ̂/IC50̂)²) against ln IC50, times
the process rubric (a blank, 0 % and 100 % controls, eight doses, replicates), weight
:data:`PROCESS_WEIGHT`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from labtools.errors import OutOfRange
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import Component, Episode, Rubric, blanks, replicates
from labtools.simulators.families.ic50_parts import (
    LEVEL,
    as_inhibition_level,
    cheng_prusoff,
    expected_ic50,
    expected_ln_spread,
    stated_substrate,
)
from labtools.simulators.families.inhibition import INHIBITOR, STOCKS, InhibitionTask
from labtools.simulators.families.inhibition_parts import (
    held_out,
    parse,
    structures,
)
from labtools.simulators.families.kinetics import BUFFER, ENZYME, STANDARD, SUBSTRATE, no_enzyme
from labtools.simulators.families.kinetics_parts import label_text
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.task import WASTE, WATER
from labtools.simulators.tasks.enzyme_kinetics import WELL_SPAN, positive_value
from labtools.simulators.tasks.scripting import caller
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.tool import Arg, tool
from labtools.units import Concentration, Range, magnitude, qty

__all__ = ["HILL_TAU", "HILL_WEIGHT", "IC50", "PROCESS_WEIGHT", "SCALE", "IC50Task"]

#: the CRPS's scale in ln units [A: the ``kinetics`` family's: a term keeps 0.9 for an IC50
#: honestly within 5 %, ~0.1 for the package's spread (0.7-1 in ln)]
SCALE = 0.15
#: the Hill slope's share of the outcome and its tolerance in ln [A: lightly scored: a slope of
#: 0.8 or 1.25 keeps 0.94 of the outcome, a one-point estimate's assumed 1 all of it]
HILL_WEIGHT, HILL_TAU = 0.2, 0.25
#: the process's share of the outcome, as the other families'
PROCESS_WEIGHT = 0.6
#: the least distinct inhibitor doses the rubric asks for [A: a 4PL's four parameters twice]
DOSES = 8


# -- the rubric --------------------------------------------------------------------------------
def _reactions(episode: Episode) -> Any:
    return [r for r in episode.of([ENZYME], "kinetic") if r.holds([SUBSTRATE])]


def uninhibited(episode: Episode) -> float:
    """1 if two or more wells of the enzyme with the substrate and no inhibitor were read over
    time (the 0 % controls), 0.5 for one."""
    wells = {r.well for r in _reactions(episode) if not r.holds([INHIBITOR])}
    return min(1.0, len(wells) / 2)


def dose_levels(episode: Episode) -> float:
    """Distinct inhibitor levels read over time with the enzyme and the substrate, out of
    :data:`DOSES`."""
    found = {f"{r.fraction(INHIBITOR):.2g}" for r in _reactions(episode) if r.holds([INHIBITOR])}
    return min(1.0, len(found) / DOSES)


RUBRIC = Rubric(
    (
        Component(
            "blank",
            0.15,
            lambda e: blanks(e, [SUBSTRATE, ENZYME], [WATER, BUFFER]),
            "a buffer-only (or empty) well read on each plate with reactions",
        ),
        Component(
            "uninhibited",
            0.2,
            uninhibited,
            "0 % inhibition: the enzyme with the substrate and no inhibitor, in duplicate",
        ),
        Component(
            "full_inhibition",
            0.2,
            no_enzyme,
            "100 % inhibition: the substrate read over time without enzyme (the baseline)",
        ),
        Component(
            "doses",
            0.25,
            dose_levels,
            f"{DOSES} inhibitor levels or more read over time",
        ),
        Component(
            "replicates",
            0.2,
            lambda e: replicates(e, [ENZYME], copies=2, conditions=5, mode="kinetic"),
            "five reaction conditions in duplicate or more",
        ),
    ),
    weight=PROCESS_WEIGHT,
    note="The stated uncertainty is scored by the outcome itself (CRPS, strictly proper).",
)


@dataclass(frozen=True)
class IC50Limits:
    """Sane bounds of a submission: an IC50 up to 1000 M (as ``enzyme_inhibition``'s Ki), a
    Hill slope 0-100."""

    constant: Range = Range(0.0, 1000.0, "molar")
    hill: Range = Range(0.0, 100.0)


# -- the task ----------------------------------------------------------------------------------
class IC50Task(InhibitionTask):
    """One instance of :class:`IC50` (its class attributes set by :meth:`IC50.build`): the
    ``inhibition`` family's world with a stated substrate level."""

    rubric = RUBRIC
    limits = IC50Limits()  # type: ignore[assignment]
    substrate_molar: ClassVar[float]

    def truth(self, lab: Lab) -> dict[str, Any]:
        """The IC50 (M) the wells run on at the stated substrate level, the Hill slope (1), and
        the ``inhibition`` family's truth (trainers and scoring only)."""
        out = dict(super().truth(lab))
        out["ic50_molar"] = cheng_prusoff(
            out["mechanism"], out["ki_molar"], out["km_molar"], self.substrate_molar
        )
        out["hill"] = 1.0
        return out

    def statement(self, lab: Lab) -> str:
        p, inh = self.pair, self.inhibitor
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
            f"{inh.name} is a reversible inhibitor of {p.name(p.enzyme)}. Find its IC50, the "
            "inhibitor concentration in the well that halves the enzyme's initial rate, with "
            f"{p.name(p.substrate)} at {label_text(self.substrate_molar)} in the well, in the "
            "assay buffer at 25 °C (the room's), with its standard uncertainty, and the "
            "dose-response curve's Hill slope. The enzyme turns the colourless substrate into "
            f"{p.name(p.product)}, read at {p.read_nm:g} nm.{ellman}{coloured} The reservoir "
            f"holds water ({WATER}), the assay buffer ({BUFFER}), the substrate ({SUBSTRATE}), "
            f"a standard of the product ({STANDARD}), the enzyme ({ENZYME}) and the inhibitor "
            f"({INHIBITOR}), a waste trough at {WASTE}; their labels (lh_get_deck) give the "
            "concentrations, the ± of the buffer's pH one standard deviation. lh_get_deck "
            "shows the deck: two 96-well plates, tip racks, the plate reader and a "
            "spectrometer. Reactions run while time passes: reader_read_absorbance_kinetic "
            "reads wells repeatedly. Submit once with submit_ic50: the IC50 with its standard "
            "uncertainty (one standard deviation, everything included) and the Hill slope. "
            f"Reward: exp(−CRPS/{SCALE}), the continuous ranked probability score of a normal "
            "distribution on the log scale, N(ln IC50, (uncertainty / IC50)²), against ln of "
            f"the truth, times {1 - HILL_WEIGHT:g} + {HILL_WEIGHT:g}·exp(−ln²(Hill slope / "
            f"truth)/2·{HILL_TAU}²), times how sound the experiment was (a blank, wells without "
            "inhibitor, the substrate without enzyme, eight inhibitor levels or more, "
            "replicate reaction wells)."
        )

    @tool(name="submit_ic50", destructive=True)
    async def submit(  # type: ignore[override]
        self,
        ic50: Annotated[Concentration, Arg("The IC50 in the well, > 0.", within="constant")],
        ic50_uncertainty: Annotated[
            Concentration, Arg("The IC50's standard uncertainty (one sd), ≥ 0.", within="constant")
        ],
        hill: Annotated[float, Arg("The dose-response curve's Hill slope, > 0.", within="hill")],
    ) -> Submitted:
        """Submit the IC50 with its standard uncertainty and the Hill slope. Ends the
        episode."""
        values = {
            "ic50_molar": positive_value(magnitude(ic50, "molar"), "ic50", "M"),
            "hill": positive_value(float(hill), "hill", ""),
        }
        sd = magnitude(ic50_uncertainty, "molar")
        if not (math.isfinite(sd) and sd >= 0.0):
            raise OutOfRange(
                f"the ic50_uncertainty must be a finite number ≥ 0, not {sd:g} M",
                field="/ic50_uncertainty",
                hint="give one standard deviation, 0 or more",
            )
        values["ic50_uncertainty"] = sd
        self.submission = values
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        truth = self.truth(lab)
        guess = self.submission["ic50_molar"]
        sd = self.submission["ic50_uncertainty"] / guess
        crps = crps_normal(math.log(guess), sd, math.log(truth["ic50_molar"]))
        hill = math.exp(
            -(math.log(self.submission["hill"] / truth["hill"]) ** 2) / (2 * HILL_TAU**2)
        )
        raw = math.exp(-crps / SCALE) * (1.0 - HILL_WEIGHT + HILL_WEIGHT * hill)
        return {
            "raw": raw,
            "ic50_ratio": guess / truth["ic50_molar"],
            "ic50_crps": crps,
            "hill_term": hill,
        }

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.ic50_expert.dose_response`: a blank, 0 % and 100 % controls, eight to twelve
        doses over the IC50s the package allows in duplicate, kinetic reads and a path check;
        initial slopes, normalised to the controls, a four-parameter logistic fit."""
        from labtools.simulators.families.ic50_expert import dose_response

        ic50, sd, hill = dose_response(
            caller(session),
            self.pair,
            self.inhibitor,
            STOCKS,
            self.substrate_molar,
            wells=self.budget.wells,
        )
        self._submit_ic50(session, ic50, sd, hill)

    def naive(self, session: Session) -> None:
        """The ``inhibition`` family's naive protocol (:func:`~.inhibition_expert.endpoints`):
        two wells at the top substrate level, one with a tenth of the inhibitor stock,
        unblanked endpoints after 10 minutes; the IC50 from their ratio as if the Hill slope
        were 1 (the one-point Ki as if noncompetitive), ± 10 %, the Hill slope 1."""
        from labtools.simulators.families.inhibition_expert import endpoints

        _, ic50 = endpoints(caller(session), self.pair, STOCKS)
        self._submit_ic50(session, ic50, 0.1 * ic50, 1.0)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; the IC50 at the centre of the levels the inhibitor's label
        allows in a well, ± itself; the Hill slope 1."""
        from labtools.demo.labels import label_micromolar

        shown = caller(session)("lh_get_deck")["labels"]
        ic50 = label_micromolar(shown[INHIBITOR]) * 1e-6 * math.sqrt(WELL_SPAN[0] * WELL_SPAN[1])
        self._submit_ic50(session, ic50, ic50, 1.0)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the package's expected IC50 (its odds of each mechanism at the
        published Ki and Km, :func:`~.ic50_parts.expected_ic50`), ± its spread; the Hill
        slope 1."""
        p, inh, s = self.pair, self.inhibitor, self.substrate_molar
        ic50 = expected_ic50(p, inh, s)
        self._submit_ic50(session, ic50, expected_ln_spread(p, inh, s) * ic50, 1.0)

    def no_controls(self, session: Session) -> None:
        """Shortcut: :func:`~.ic50_expert.one_point`: the uninhibited well and one dose at the
        package's expected IC50, no blank, 100 % control, replicate or path check; the IC50
        from one point's inhibition, ± 10 %, the Hill slope 1."""
        from labtools.simulators.families.ic50_expert import one_point

        ic50 = one_point(caller(session), self.pair, self.inhibitor, STOCKS, self.substrate_molar)
        self._submit_ic50(session, ic50, 0.1 * ic50, 1.0)

    @staticmethod
    def _submit_ic50(session: Session, ic50: float, sd: float, hill: float) -> None:
        ic50 = ic50 if math.isfinite(ic50) and ic50 > 0 else 1e-3
        sd = sd if math.isfinite(sd) and sd >= 0 else ic50
        hill = hill if math.isfinite(hill) and hill > 0 else 1.0
        caller(session)(
            "submit_ic50",
            ic50=qty(float(f"{min(ic50, 100.0) * 1e6:.6g}"), "micromolar"),
            ic50_uncertainty=qty(float(f"{min(sd, 100.0) * 1e6:.6g}"), "micromolar"),
            hill=float(f"{min(hill, 50.0):.6g}"),
        )


class IC50(LevelledFamily):
    """A reversible inhibitor's IC50 at a stated substrate level, with the Hill slope
    (:mod:`.ic50`)."""

    id = "ic50"
    title = "Find an inhibitor's IC50 at a stated substrate level, with the Hill slope"
    members = ()
    task = IC50Task
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        p, inh, absorber = parse(structure)
        s = stated_substrate(structure)
        title = f"IC50 of {inh.name} with {p.name(p.enzyme)} at {label_text(s)} substrate"
        if absorber is not None:
            title += f", the preparation coloured with {analyte(absorber).name}"
        return {
            "title": title,
            "level": as_inhibition_level(LEVEL[level], p, inh, s),
            "pair_key": p.key,
            "absorber_key": absorber,
            "inhibitor_key": inh.key,
            "substrate_molar": s,
        }
