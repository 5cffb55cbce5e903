"""The ``arrhenius`` family: an enzyme's apparent activation energy and its turnover per labelled
active site at 37 °C, from rates measured in the plate reader's heated chamber.

Structures: ``<pair>+<window>`` over the kinetics family's pairs
(:data:`~.kinetics_parts.PAIRS`: alkaline phosphatase, chymotrypsin, β-galactosidase,
acetylcholinesterase with their substrates) and the temperature windows of
:data:`~.arrhenius_parts.WINDOWS` (29-37, 29-41 and 33-45 °C). Levels
(:data:`~.arrhenius_parts.LEVEL`) set the enzyme stock's activity, the reader's noise and the
budget (fewer wells and hours).

The question, at the substrate concentration a well holds with half its volume of the substrate
stock (ten times the published Km: near saturation): the apparent activation energy of the
initial rate over the window, Ea = R·ln(v(T_high)/v(T_low))/(1/T_low − 1/T_high), and the
initial rate per labelled active site at 37 °C, k37 = v(37 °C)/[E]_label. Initial: with all of
the enzyme still folded (the rate at the start of a well's time at that temperature).

Hidden truth per seed: everything the kinetics family draws (Km and kcat within the pair's
published spans, the lot's activity, the product's absorptivity in the medium and pKa, the
buffer's pH, the stocks' real concentrations, the instruments) and the enzyme's temperature laws
(``kinetics.toml``'s ``[enzyme.<key>.temperature]``: kcat's Ea, Km(37)/Km(25), the activity left
after 10 minutes at 56 °C, unfolding's Ea), each uniform within its published span; the
chamber's sensor offset (±0.2 °C). What makes the controls matter:

- the *temperature actually reached in the wells*: the chamber's air settles on its setpoint in
  minutes, a plate follows it with a 5-minute lag (``plate_reader.toml``), and a plate cools on
  the deck while the enzyme goes in. Rates read at once after the chamber holds its setpoint are
  rates at lower, changing temperatures: the expert pre-warms the plate and times its reads after
  it has settled again;
- *heat inactivation* at a window's top (the enzyme unfolds over the read): the expert fits each
  progress curve's curvature and extrapolates the rate back to the start of the read;
- *the calibration*: k37 is in molar units, so only a product standard read in the plate, in the
  assay buffer, turns OD into molar without the library's ε and the nominal path.

Reward: raw = exp(−ln²(Êa/Ea)/2τ²)·exp(−ln²(k̂37/k37)/2τ²) (:func:`~simulators.tasks.
enzyme_kinetics.log_term`, τ = :data:`TAU`), times the process rubric (weight
:data:`~.kinetics.PROCESS_WEIGHT`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import Component, Episode, Rubric, blanks, levels
from labtools.simulators.families.arrhenius_parts import (
    LEVEL,
    REFERENCE_C,
    WINDOWS,
    boltzmann,
    ea_centre,
    held_out,
    labels,
    structures,
)
from labtools.simulators.families.kinetics import (
    BUFFER,
    CONTAINERS,
    ENZYME,
    PROCESS_WEIGHT,
    STANDARD,
    SUBSTRATE,
    HeatedKineticsTask,
    no_enzyme,
)
from labtools.simulators.families.kinetics_parts import SUBSTRATE_MAX_UL, WELL_UL, label_text, pair
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.task import WASTE, WATER
from labtools.simulators.tasks.enzyme_kinetics import MEDIAN_KCAT_PER_S, log_term, positive_value
from labtools.simulators.tasks.scripting import caller
from labtools.simulators.world.kinetics_temperature import GAS_CONSTANT, kelvin
from labtools.tool import Arg, tool
from labtools.units import Range, RateConstant, magnitude, qty

__all__ = ["TAU", "Arrhenius", "ArrheniusTask"]

#: the score's width in ln units, for both constants [A: an Ea within 5 % keeps 0.88 of a term;
#: the spans the package publishes (Ea's 15-50 % wide, kcat's 3-10-fold with the lot's 20-25 %)
#: keep little of it]
TAU = 0.1
#: a generic enzyme's activation energy (J/mol) [L: most enzyme-catalysed reactions have Ea of
#: 25-65 kJ/mol; 50 the prior agent's guess]; the naive one's, from the Q10 = 2 rule of thumb
#: near 30 °C [C: R·T²·ln 2/10 K = 53 kJ/mol]
GENERIC_EA, Q10_EA = 50e3, 53e3


@dataclass(frozen=True)
class ArrheniusLimits:
    """Sane bounds of a submission, far outside any enzyme's."""

    activation: Range = Range(0.0, 1000.0)
    turnover: Range = Range(0.0, 1e9, "1 / second")


def replicated_reads(episode: Episode) -> float:
    """The share of :data:`~.arrhenius_parts.SETPOINTS` kinetic reads in which two or more wells
    of one reaction condition (the enzyme in) were read together: replicates at each
    temperature."""
    from labtools.simulators.families.arrhenius_parts import SETPOINTS

    per_read: dict[int, dict[Any, int]] = {}
    for r in episode.of([ENZYME], "kinetic"):
        if r.holds([SUBSTRATE]):
            counts = per_read.setdefault(r.seq, {})
            counts[r.condition] = counts.get(r.condition, 0) + 1
    good = sum(1 for counts in per_read.values() if max(counts.values()) >= 2)
    return min(1.0, good / SETPOINTS)


RUBRIC = Rubric(
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
            0.2,
            no_enzyme,
            "the substrate read over time without enzyme (its own hydrolysis, the baseline)",
        ),
        Component(
            "replicates",
            0.3,
            replicated_reads,
            "replicate reaction wells read together at each of four temperatures",
        ),
    ),
    weight=PROCESS_WEIGHT,
)


class ArrheniusTask(HeatedKineticsTask):
    """One instance of :class:`Arrhenius` (its class attributes set by
    :meth:`Arrhenius.build`). The wells, stocks and labels are the kinetics family's (no coloured
    preparation); the enzyme's temperature laws are drawn on top."""

    rubric = RUBRIC
    limits = ArrheniusLimits()  # type: ignore[assignment]
    window: ClassVar[str]

    def substrate_molar(self) -> float:
        """The substrate in a well holding half its volume of the stock (the label's)."""
        return labels(self.pair, self.level)["substrate"] * SUBSTRATE_MAX_UL / WELL_UL

    def truth(self, lab: Lab) -> dict[str, float]:
        """Ea (J/mol) of the initial rate over the window and k37 (s⁻¹ per labelled site) at
        :meth:`substrate_molar`, and what this seed drew (trainers and scoring only)."""
        world = lab.shared["world"]
        self._install(world)
        s = self.substrate_molar()

        def rate(celsius: float) -> float:
            work = world.kinetics.at_work(self.pair.enzyme, celsius)
            return float(work["kcat_per_s"]) * s / (float(work["km_molar"]) + s)

        low, high = WINDOWS[self.window]
        x = 1.0 / kelvin(low) - 1.0 / kelvin(high)
        return {
            "ea_j_per_mol": GAS_CONSTANT * math.log(rate(high) / rate(low)) / x,
            "k37_per_s": rate(REFERENCE_C),
            **self.drawn(lab),
        }

    def statement(self, lab: Lab) -> str:
        p = self.pair
        low, high = WINDOWS[self.window]
        s = label_text(self.substrate_molar())
        ellman = ""
        if p.product == "tnb":
            ellman = " Each thiocholine released reduces the buffer's DTNB to one TNB at once."
        return (
            f"Determine how the activity of {p.name(p.enzyme)} on {p.name(p.substrate)} in the "
            f"assay buffer depends on temperature between {low:g} and {high:g} °C, at {s} "
            f"substrate (a well holding half its volume of the substrate stock): the apparent "
            "activation energy of the initial rate over that window, Ea = R·ln(v(T_high)/"
            "v(T_low))/(1/T_low − 1/T_high) in kJ/mol, and the initial rate per labelled active "
            f"site at {REFERENCE_C:g} °C, k37 = v(37 °C)/[E] (s⁻¹, [E] the enzyme concentration "
            "its label states; the lot's real activity is not stated). Initial: before the enzyme "
            "loses any activity at that temperature (it unfolds when warm). The enzyme turns "
            f"the colourless substrate into {p.name(p.product)}, read at {p.read_nm:g} nm."
            f"{ellman} The reservoir holds water ({WATER}), the assay buffer ({BUFFER}), the "
            f"substrate ({SUBSTRATE}), a standard of the product ({STANDARD}) and the enzyme "
            f"({ENZYME}), a waste trough at {WASTE}; their labels (lh_get_deck) give the "
            "concentrations. lh_get_deck shows the deck: two 96-well plates, tip racks, the "
            "plate reader and a spectrometer. The room is at 25 °C; the reader's chamber heats "
            "(reader_set_temperature, reader_get_temperature, reader_stop_heating) and a plate "
            "in it follows the chamber's air minutes later. Reactions run while time passes: "
            "reader_read_absorbance_kinetic reads wells repeatedly. Submit once with "
            "submit_arrhenius. Reward: exp(-ln²(Ea estimate/Ea)/2τ²)·exp(-ln²(k37 estimate/"
            f"k37)/2τ²) with τ = {TAU}, times how sound the experiment was (a blank, a product "
            "standard curve, a no-enzyme control, replicate reaction wells at each of four "
            "temperatures)."
        )

    @tool(name="submit_arrhenius", destructive=True)
    async def submit(  # type: ignore[override]
        self,
        activation_energy: Annotated[
            float,
            Arg("The apparent activation energy Ea, kJ/mol, > 0.", within="activation"),
        ],
        k37: Annotated[
            RateConstant,
            Arg("The initial rate per labelled active site at 37 °C, > 0.", within="turnover"),
        ],
    ) -> Submitted:
        """Submit Ea and k37. Ends the episode."""
        self.submission = {
            "ea_j_per_mol": 1e3 * positive_value(activation_energy, "activation_energy", "kJ/mol"),
            "k37_per_s": positive_value(magnitude(k37, "1 / second"), "k37", "1/s"),
        }
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        truth = self.truth(lab)
        out: dict[str, float] = {}
        raw = 1.0
        for name, key in (("ea", "ea_j_per_mol"), ("k37", "k37_per_s")):
            term = log_term(self.submission[key], truth[key], TAU)
            out[f"{name}_ratio"] = self.submission[key] / truth[key]
            out[f"{name}_term"] = term
            raw *= term
        return {"raw": raw, **out}

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.arrhenius_expert.arrhenius`: four temperatures across the window, the plate
        pre-warmed at each, the enzyme in replicate wells, reads once the plate has settled,
        each rate extrapolated to the read's start, a product standard curve, an Arrhenius
        fit."""
        from labtools.simulators.families.arrhenius_expert import arrhenius

        call = caller(session)
        ea, k37 = arrhenius(call, self.pair, CONTAINERS, self.window, wells=self.budget.wells)
        self._submit_arrhenius(session, ea, k37)

    def naive(self, session: Session) -> None:
        """The kinetics family's naive endpoint at the room's 25 °C (one well, one unblanked
        reading after 10 minutes, the library's ε at the product's peak over 1 cm); Ea from the
        Q10 = 2 rule of thumb, k37 from it."""
        from labtools.simulators.families.kinetics_expert import endpoint_kcat

        k25 = endpoint_kcat(caller(session), self.pair, CONTAINERS)
        self._submit_arrhenius(session, Q10_EA, k25 * boltzmann(Q10_EA, REFERENCE_C, 25.0))

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; a generic enzyme's Ea and the median enzyme's kcat."""
        self._submit_arrhenius(session, GENERIC_EA, MEDIAN_KCAT_PER_S)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the package's published figures: the Ea span's centre, the
        kcat span's centre carried to 37 °C with it."""
        p = self.pair
        ea = ea_centre(p)
        self._submit_arrhenius(session, ea, p.kcat_centre * boltzmann(ea, REFERENCE_C, 25.0))

    def no_controls(self, session: Session) -> None:
        """Shortcut: :func:`~.arrhenius_expert.uncontrolled`: one well at each end of the window,
        each started once the chamber holds its setpoint and read at once, no pre-warmed plate,
        blank, standard, no-enzyme well or replicate; rates over the library's ε (at the
        labelled pH) and the nominal path."""
        from labtools.simulators.families.arrhenius_expert import uncontrolled

        ea, k37 = uncontrolled(caller(session), self.pair, CONTAINERS, self.window)
        self._submit_arrhenius(session, ea, k37)

    @staticmethod
    def _submit_arrhenius(session: Session, ea: float, k37: float) -> None:
        ea = ea if math.isfinite(ea) and ea > 0 else GENERIC_EA
        k37 = k37 if math.isfinite(k37) and k37 > 0 else MEDIAN_KCAT_PER_S
        caller(session)(
            "submit_arrhenius",
            activation_energy=float(f"{min(ea / 1e3, 999.0):.6g}"),
            k37=qty(float(f"{min(k37, 1e8):.6g}"), "1 / second"),
        )


class Arrhenius(LevelledFamily):
    """An enzyme's apparent activation energy and its rate at 37 °C (:mod:`.arrhenius`)."""

    id = "arrhenius"
    title = "Determine an enzyme's activation energy and its turnover at 37 °C"
    task = ArrheniusTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        key, window = structure.split("+")
        p = pair(key)
        low, high = WINDOWS[window]
        return {
            "title": f"Activation energy of {p.name(p.enzyme)} with {p.name(p.substrate)}, "
            f"{low:g}-{high:g} °C",
            "pair_key": p.key,
            "absorber_key": None,
            "window": window,
        }
