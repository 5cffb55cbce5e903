"""The ``ph`` family: a sample's pH, with its uncertainty, measured spectrophotometrically with
an acid-base indicator (the ratio method of seawater pH with m-cresol purple: the base and acid
bands' ratio R gives pH = pKa + log((R − e1)/(e2 − R·e3)) [L: Clayton & Byrne 1993]; here with
the library's indicators, their forms' whole spectra in place of two wavelengths).

Structures: ``<indicator>+<buffers>+<side>`` or ``<indicator>+<screen>+<buffers>+<side>`` over
the ``equilibrium`` family's indicators and screens (:mod:`.equilibrium_parts`), the buffer
sets of :data:`~.ph_parts.PH_BUFFER_SETS` (seven one pH unit apart, or five two units apart,
each holding both of the indicator's pure forms whatever its pKa's spread) and the side of the
indicator's pKa the sample lies on (:data:`~.ph_parts.SIDES`: the statement says which form
the sample turns the indicator mostly into). A *screen* here is a coloured matrix: a
pH-independent dye in the sample absorbing where one of the indicator's forms does. Levels set
the sample's distance from the pKa (:data:`~.ph_parts.DISTANCE`: inside the useful range
pKa ± 1 at level 1, at and past its edge at level 5), the stock's strength, the screen's share,
the reader's noise and the budget (equilibrium's :data:`~.equilibrium_parts.LEVEL`).

Hidden truth per seed: the indicator's apparent pKa in this lab (the library's, off by
:data:`~.equilibrium_parts.PKA_SPREAD`, 1 sd), its lot (each form's ε off by
:data:`~.ph_parts.LOT_EPSILON_SD`, the bands shifted by :data:`~.ph_parts.LOT_SHIFT_NM_SD`), each
buffer's real pH (its label ± :data:`~.equilibrium_parts.BUFFER_PH_SD`, as ``indicator_pka``'s
buffers), the stock's concentration, the screen's and the screen's dye lot, the sample's pH
(the apparent pKa ∓ the level's distance) and the instruments. The library's pKa and spectra
(:meth:`PhTask.no_controls`) miss by the pKa's spread; the indicator calibrated in the lab's
buffers does not: the sample's pH is then read on the buffers' own scale.

The world sets a well's pH by its buffers alone (an amount-weighted mean: no buffer capacity),
so the indicator, in water, never moves the sample's pH: the perturbation a real indicator
makes in a weakly buffered sample is not modelled, and no level asks for its correction.

Reward: raw = exp(−CRPS(N(pH, σ²), pH_true) / :data:`~.ph_parts.SCALE`), times the process
rubric (a blank, the indicator calibrated in the buffers, replicates), weight
:data:`~.ph_parts.PROCESS_WEIGHT`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import numpy as np

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.errors import OutOfRange
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.family import InstanceName
from labtools.simulators.families.equilibrium_parts import (
    BUFFERS,
    INDICATOR,
    LEVEL,
    PKA_SPREAD,
    PKA_TRUNCATE,
    buffer_label,
    indicator,
    overlapped_form,
    real_buffer_ph,
    stock_label,
)
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.ph_parts import (
    DISTANCE,
    LOT_EPSILON_SD,
    LOT_SHIFT_NM_SD,
    PH_BUFFER_SETS,
    SAMPLE_KEY,
    SCALE,
    SCREEN_DOSE,
    buffer_containers,
    held_out,
    rubric,
    structures,
)
from labtools.simulators.families.task import SAMPLE, STOCK_UL, WASTE, WATER, WELL_UL, FamilyTask
from labtools.simulators.families.task import log_uniform as draw_log_uniform
from labtools.simulators.tasks.indicator_pka import buffers_of
from labtools.simulators.tasks.scripting import caller, nominal_path_cm
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.simulators.world import Mixture, SpeciesLibrary
from labtools.tool import Arg, tool
from labtools.units import Range

__all__ = ["Ph", "PhLimits", "PhTask"]

#: the sample's label [A: what it is, not its pH]
SAMPLE_LABEL = "sample: a buffer of unknown pH, 100 mM"


@dataclass(frozen=True)
class PhLimits:
    """Sane bounds of a submission."""

    ph: Range = Range(0.0, 14.0)
    uncertainty: Range = Range(0.0, 14.0)


class PhTask(FamilyTask):
    """One instance of :class:`Ph` (its class attributes set by :meth:`Ph.build`)."""

    limits = PhLimits()
    indicator_key: ClassVar[str]
    screen_key: ClassVar[str | None]
    side: ClassVar[str]
    #: container → labelled pH of each buffer on the deck, most acidic first
    buffer_ph: ClassVar[Mapping[str, int]]

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, float]:
        """The sample's pH, the indicator's apparent pKa and lot, the stock's concentrations
        (µM) this seed drew (trainers and scoring only)."""
        return dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        ind = indicator(self.indicator_key)
        shift = float(rng.standard_normal())
        while abs(shift) > PKA_TRUNCATE:
            shift = float(rng.standard_normal())
        pka = ind.pka + PKA_SPREAD * shift
        distance = float(rng.uniform(*DISTANCE[self.level.number]))
        od = draw_log_uniform(rng, self.level.od)
        stock_um = od / (ind.epsilon[ind.strong] * nominal_path_cm(WELL_UL)) * 1e6
        out = {
            "ph": pka + (distance if self.side == "base" else -distance),
            "pka": pka,
            "indicator_um": stock_um,
            "acid_factor": math.exp(LOT_EPSILON_SD * float(rng.standard_normal())),
            "base_factor": math.exp(LOT_EPSILON_SD * float(rng.standard_normal())),
            "shift_nm": LOT_SHIFT_NM_SD * float(rng.standard_normal()),
        }
        if self.screen_key is not None:
            form, _ = overlapped_form(self.indicator_key, self.screen_key)
            wanted = draw_log_uniform(rng, self.level.interferent_ratio) * ind.epsilon[form]
            screen = SpeciesLibrary.default()[self.screen_key]
            read = float(screen.absorptivity(ind.peak_nm[form]))
            out["screen_um"] = wanted * stock_um * SCREEN_DOSE / read
        return out

    def prepare(self, lab: Lab, seed: int) -> None:
        """The indicator's lot and apparent pKa, each buffer's real pH and the sample's buffer
        into the world's library; the stock, the buffers and the sample into the reservoir,
        their labels on the deck."""
        world = lab.shared["world"]
        library = SpeciesLibrary.default()
        truth = self.truth(lab)
        species = library[self.indicator_key]
        forms = {
            name: form.varied(truth[f"{name}_factor"], truth["shift_nm"])
            for name, form in species.forms.items()
        }
        world.species.put(dataclasses.replace(species, pka=truth["pka"], forms=forms))
        labels = {}
        for container, ph in self.buffer_ph.items():
            key = BUFFERS[ph][0]
            real = world.hidden(f"species/{key}/ph", real_buffer_ph(float(ph)))
            world.species.put(dataclasses.replace(library[key], ph=real))
            labels[container] = buffer_label(ph)
            world.fill_stock(
                {
                    "well": container,
                    "species": key,
                    "concentration_uM": 100_000.0,
                    "volume_ul": STOCK_UL,
                    "label": labels[container],
                }
            )
        sample = dataclasses.replace(
            library["buffer_ph7"], key=SAMPLE_KEY, name="Sample buffer", ph=truth["ph"]
        )
        world.species.put(sample)
        molar = {SAMPLE_KEY: 0.1}
        if self.screen_key is not None:
            molar[self.screen_key] = truth["screen_um"] * 1e-6
        labels[SAMPLE] = SAMPLE_LABEL
        world.fill(SAMPLE, Mixture.solution(STOCK_UL, molar), SAMPLE_LABEL)
        labels[INDICATOR] = stock_label(self.indicator_key, None)
        world.fill(
            INDICATOR,
            Mixture.solution(STOCK_UL, {self.indicator_key: truth["indicator_um"] * 1e-6}),
            labels[INDICATOR],
        )
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update(labels)

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        ind = indicator(self.indicator_key)
        matrix = "colourless"
        if self.screen_key is not None:
            matrix = (
                f"coloured by {analyte(self.screen_key).name}, a dye that absorbs whatever the pH"
            )
        buffers = "; ".join(f"{c}: '{labels[c]}'" for c in self.buffer_ph)
        return (
            f"Measure the pH of the sample at {SAMPLE} ('{labels[SAMPLE]}', {matrix}) with "
            f"{ind.name}, an acid-base indicator: the sample turns it mostly into its "
            f"{self.side} form. {INDICATOR} holds the indicator's stock ('{labels[INDICATOR]}'); "
            "its apparent pKa and its forms' spectra in this lab need not be the published ones "
            f"(ionic strength, medium and lot move them). Buffers in the reservoir: {buffers}; "
            f"the ± is one standard deviation of the real pH. Water at {WATER}, a waste trough "
            f"at {WASTE}. lh_get_deck shows the deck: two 96-well plates, tip racks, the plate "
            "reader and a spectrometer. A little indicator added to a buffer or to the sample "
            "takes its pH. Submit once with submit_ph: the sample's pH and its standard "
            "uncertainty (one standard deviation, everything included). Reward: "
            f"exp(-CRPS / {SCALE}), with CRPS the continuous ranked probability score of a "
            "normal distribution with your pH and uncertainty against the sample's true pH, "
            "times how sound the experiment was (a blank, the indicator read in the buffers "
            "where it is all in its acid form, all in its base form and in between, replicate "
            "wells)."
        )

    @tool(name="submit_ph", destructive=True)
    async def submit(
        self,
        ph: Annotated[float, Arg("The sample's pH.", within="ph")],
        uncertainty: Annotated[
            float, Arg("Its standard uncertainty: one standard deviation.", within="uncertainty")
        ],
    ) -> Submitted:
        """Submit the sample's pH and its uncertainty. Ends the episode."""
        for name, value in (("ph", ph), ("uncertainty", uncertainty)):
            if not math.isfinite(value):
                raise OutOfRange(f"the {name} must be a finite number", field=f"/{name}")
        self.submission = {"ph": float(ph), "uncertainty": float(uncertainty)}
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        guess, sd = self.submission["ph"], self.submission["uncertainty"]
        truth = self.truth(lab)["ph"]
        crps = crps_normal(guess, sd, truth)
        return {"raw": math.exp(-crps / SCALE), "error": guess - truth, "crps": crps}

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.ph_expert.calibrated_ph`: the indicator calibrated in the buffers (its
        apparent pKa and forms), then read in the sample against a sample blank."""
        from labtools.simulators.families.ph_expert import calibrated_ph

        ph, sd = calibrated_ph(
            caller(session),
            published_pka=indicator(self.indicator_key).pka,
            wells=self.budget.wells,
            coloured=self.screen_key is not None,
        )
        self._submit(session, ph, sd)

    def naive(self, session: Session) -> None:
        """:func:`~.ph_expert.colour_chart`: the indicator in each buffer and in the sample, one
        well each, read once at the base form's library peak; the sample's pH interpolated
        between the buffers its reading falls between."""
        from labtools.simulators.families.ph_expert import colour_chart

        wavelength = indicator(self.indicator_key).peak_nm["base"]
        ph, sd = colour_chart(caller(session), wavelength_nm=wavelength)
        self._submit(session, ph, sd)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; the middle of the labelled buffers' pH range, ± a uniform
        prior's sd over it (from the labels alone)."""
        ph = [p for _, p, _ in buffers_of(caller(session)("lh_get_deck")["labels"])]
        low, high = min(ph), max(ph)
        self._submit(session, (low + high) / 2.0, (high - low) / math.sqrt(12.0))

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the middle of the useful range's stated half (the library's
        pKa ∓ 0.5), ± that half's uniform sd and the published spread
        (:data:`~.equilibrium_parts.PKA_SPREAD`)."""
        pka = indicator(self.indicator_key).pka
        ph = pka + (0.5 if self.side == "base" else -0.5)
        self._submit(session, ph, math.hypot(PKA_SPREAD, 1.0 / math.sqrt(12.0)))

    def no_controls(self, session: Session) -> None:
        """Shortcut: :func:`~.ph_expert.uncontrolled`: the sample with the indicator read once,
        no blank, calibration or replicate; unmixed with the library's spectra of the forms (and
        the screen's) over the nominal path, the pH from the library's pKa."""
        from labtools.simulators.families.ph_expert import uncontrolled

        library = SpeciesLibrary.default()
        ph, sd = uncontrolled(
            caller(session),
            indicator=library[self.indicator_key],
            screen=None if self.screen_key is None else library[self.screen_key],
        )
        self._submit(session, ph, sd)

    @staticmethod
    def _submit(session: Session, ph: float, sd: float) -> None:
        value = ph if math.isfinite(ph) else 7.0
        spread = sd if math.isfinite(sd) and sd >= 0 else 1.0
        caller(session)(
            "submit_ph",
            ph=round(min(max(value, 0.0), 14.0), 4),
            uncertainty=round(min(spread, 14.0), 4),
        )


class Ph(LevelledFamily):
    """A sample's pH with an indicator calibrated in the lab's buffers (:mod:`.ph`)."""

    id = "ph"
    title = "Measure a sample's pH with an acid-base indicator, with its uncertainty"
    task = PhTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        keys = structure.split("+")
        name = str(InstanceName(self.id, level, structure))
        containers = buffer_containers(keys[-2])
        screen = keys[1] if len(keys) == 4 else None
        phs = PH_BUFFER_SETS[keys[-2]]
        title = f"A sample's pH with {indicator(keys[0]).name}"
        if screen is not None:
            title += f", the sample coloured by {analyte(screen).name}"
        return {
            "title": title + f" (buffers pH {phs[0]}-{phs[-1]}, {keys[-1]} side)",
            "rubric": rubric(name, {c: float(p) for c, p in containers.items()}),
            "indicator_key": keys[0],
            "screen_key": screen,
            "side": keys[-1],
            "buffer_ph": containers,
        }
