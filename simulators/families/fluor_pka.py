"""The ``fluor_pka`` family: a fluorescent pH probe's apparent pKa in the lab's buffers, with its
uncertainty, measured by fluorescence (the excitation spectrum at one emission), not absorbance.

Structures: ``<probe>+<buffers>`` or ``<probe>+<screen>+<buffers>`` over :data:`PROBES` (the
library's two-form indicators that fluoresce: pyranine, HPTS), the equilibrium family's buffer
sets that hold both of the probe's pure forms (:func:`~.equilibrium_parts.buffers_fit`) and an
optional *screen*: a non-fluorescent dye in the probe's stock that absorbs at one form's
excitation (:func:`~.equilibrium_parts.screens_of`, those with no emission in the library), an
inner filter common to every well. Levels (:data:`LEVEL`) set the stock's strength (from far
too strong, where a 1 in 10 dilution saturates the detector and its own inner filter bends the
reading, down to a few times the plate's autofluorescence), the screen's share, the reader's
noise and the budget.

Hidden truth per seed: the probe's apparent pKa in these buffers (the library's value off by
:data:`~.equilibrium_parts.PKA_SPREAD`, 1 sd); each buffer's real pH (its label's ±); the
stock's concentration (log-uniform in the level's range) and the screen's; the probe's lot (ε
and quantum yield, :data:`~.fluorimetry_parts.LOT`); the reader's fluorescence scale and
autofluorescence floor. Fluorescence depends on the gain, the inner filter of every absorber and
the floor, so intensities alone do not give the pKa: the excitation spectra across the buffers,
blanked, from a probe dilute enough that its own inner filter is negligible and read at a gain
that does not saturate, fitted as two forms (:func:`~labtools.simulators.tasks.pka_fit.
pka_posterior`), do. The acid form is excited near 405 nm, the base near 455 nm, both emit at
512 nm (species.toml), so the ratio of the two excitations cancels concentration and gain.

Reward: raw = exp(−CRPS(N(p̂, σ̂²), pKa′) / :data:`~.equilibrium_parts.SCALE`), as the
equilibrium family's (its submission, as ``submit_fluor_pka``), times the process rubric (a
blank, the probe read in each pure form, replicate wells, all by fluorescence), weight
:data:`PROCESS_WEIGHT`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, ClassVar

import numpy as np

from labtools.lab import Lab
from labtools.session import Budget, Session, Submitted
from labtools.session.process import Component, Episode, Rubric, blanks, replicates
from labtools.simulators.families.equilibrium import Equilibrium, EquilibriumTask, pure_form_reads
from labtools.simulators.families.equilibrium_parts import (
    BUFFER_SETS,
    INDICATOR,
    SCALE,
    buffers_fit,
    indicator,
    screens_of,
    spacing,
)
from labtools.simulators.families.fluorimetry_parts import LOT, of_lot
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.levels import Level
from labtools.simulators.families.parts import HELD_OUT_SPECIES, analyte
from labtools.simulators.families.task import WASTE, WATER
from labtools.simulators.tasks.indicator_pka import pka_submission
from labtools.simulators.tasks.offers import ENDPOINT, FLUORESCENCE, LIQUID
from labtools.simulators.tasks.scripting import caller
from labtools.simulators.world import SpeciesLibrary
from labtools.tool import Arg, tool

__all__ = ["LEVEL", "PROBES", "FluorPka", "FluorPkaLevel", "FluorPkaTask"]

#: the probe's stock (the screen, where the structure names one, is in it): the equilibrium
#: family's container
PROBE = INDICATOR
#: the process's share of the outcome [A: as the other families']
PROCESS_WEIGHT = 0.6
#: held out of training (``test-ood`` only), besides the screens of
#: :data:`~.parts.HELD_OUT_SPECIES`: a screen of this class with buffers two units apart [A:
#: each seen in training, never together]
HELD_OUT_COMBINATIONS = frozenset({("product", "sparse")})


def _is_probe(key: str) -> bool:
    species = SpeciesLibrary.default()[key]
    if species.fluorescence is None or set(species.forms) != {"acid", "base"}:
        return False
    try:
        indicator(key)
    except ValueError:
        return False
    return True


#: the probes [A: every two-form indicator of the library with an emission that the equilibrium
#: family's criteria admit: pyranine alone]
PROBES = tuple(k for k in SpeciesLibrary.default() if _is_probe(k))


def probe_screens(key: str) -> list[str]:
    """The equilibrium family's screens of ``key`` that do not fluoresce (a fluorescent screen
    would add its own emission)."""
    library = SpeciesLibrary.default()
    return [s for s in screens_of(key) if library[s].fluorescence is None]


@dataclass(frozen=True)
class FluorPkaLevel(Level):
    """A level's physics and budget: ``od`` the stock's optical density neat in a 200 µL well at
    its base form's peak (library ε, nominal path; log-uniform within), ``interferent_ratio``
    the screen's optical density at the form's peak it overlaps over that form's (log-uniform
    within), ``noise`` the factor on the reader's fluorescence noise floor and CV."""


#: each level [A]: the stock's strength, unstated, from too strong (levels 1-3: a 1 in 10
#: dilution reads past the 1e6 RFU detector's ceiling at the reader's own gain or is bent by
#: its own inner filter, by up to OD 10 in the well at level 3) to faint (levels 4-5: a 1 in 10
#: reads 50-1,000 RFU in its base form at the reader's own gain, a few times the 10-30 RFU
#: autofluorescence in the buffer below the pKa, where the base form is a few tenths and the
#: acid form barely excited at 455 nm); the screen's share and the noise as the shared levels'
#: (the noise on the fluorescence floor and CV alike); the budget as the equilibrium family's
LEVEL = {
    n: FluorPkaLevel(n, od, SHARED_LEVEL[n].interferent_ratio, SHARED_LEVEL[n].noise, budget)
    for n, od, budget in (
        (1, (1.0, 10.0), Budget(calls=150, tips=96, reagent_ul=12_000, wells=96)),
        (2, (3.0, 30.0), Budget(calls=120, tips=64, reagent_ul=11_000, wells=72)),
        (3, (10.0, 100.0), Budget(calls=100, tips=48, reagent_ul=10_000, wells=48)),
        (4, (0.0002, 0.002), Budget(calls=80, tips=32, reagent_ul=10_000, wells=32)),
        (5, (0.0001, 0.001), Budget(calls=70, tips=24, reagent_ul=10_000, wells=24)),
    )
}


def _apparent_pka(episode: Episode, instance: str) -> float | None:
    hidden = getattr(episode.shared.get("world"), "hidden_truth", None)
    truth = hidden().get(f"task/{instance}") if callable(hidden) else None
    return float(truth["pka"]) if isinstance(truth, Mapping) and "pka" in truth else None


def _fluorescence(episode: Episode) -> Episode:
    """``episode`` seen through its fluorescence readings only."""
    kept = tuple(r for r in episode.readings if r.mode == "fluorescence")
    return dataclasses.replace(episode, readings=kept)


def _rubric(instance: str, labelled: Mapping[str, float]) -> Rubric:
    solvents = (WATER, *labelled)

    def forms(episode: Episode) -> float:
        pka = _apparent_pka(episode, instance)
        return 0.0 if pka is None else pure_form_reads(_fluorescence(episode), labelled, pka)

    return Rubric(
        (
            Component(
                "blank",
                0.3,
                lambda e: blanks(_fluorescence(e), [PROBE], solvents),
                "a water, buffer or empty-well blank read by fluorescence on each plate the "
                "probe was",
            ),
            Component(
                "pure_forms",
                0.4,
                forms,
                "the probe's fluorescence read all in its acid form (a buffer ≥ 1.28 pH units "
                "below its pKa) and all in its base form (≥ 1.28 above): half each",
            ),
            Component(
                "replicates",
                0.3,
                lambda e: replicates(
                    e, [PROBE], copies=3, conditions=min(5, len(labelled)), mode="fluorescence"
                ),
                "five probe-in-buffer conditions (all of a set of fewer) in triplicate",
            ),
        ),
        weight=PROCESS_WEIGHT,
        note="The stated uncertainty is scored by the outcome itself (CRPS, strictly proper).",
    )


# -- the task ----------------------------------------------------------------------------------
class FluorPkaTask(EquilibriumTask):
    """One instance of :class:`FluorPka`: equilibrium's buffers, stock, submission and score; a
    fluorescent probe read by fluorescence."""

    lab_tools = LIQUID | ENDPOINT | FLUORESCENCE

    level: ClassVar[FluorPkaLevel]

    noisier = ("reader.fluorescence.noise_floor", "reader.fluorescence.cv")

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        out = super()._draw(rng)
        out["epsilon_factor"], out["yield_factor"] = LOT.draw(rng)
        return out

    def prepare(self, lab: Lab, seed: int) -> None:
        """Equilibrium's world (the probe's apparent pKa, the buffers' real pH, the stock), the
        probe as its lot (ε and quantum yield)."""
        super().prepare(lab, seed)
        world = lab.shared["world"]
        truth = self.truth(lab)
        species = world.species[self.indicator_key]
        world.species.put(of_lot(species, truth["epsilon_factor"], truth["yield_factor"]))

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        name = indicator(self.indicator_key).name
        screened = ""
        if self.screen_key is not None:
            screened = (
                f" The stock also holds {analyte(self.screen_key).name}, a dye that absorbs "
                "light whatever the pH and does not fluoresce."
            )
        buffers = "; ".join(f"{c}: '{labels[c]}'" for c in self.buffer_ph)
        fluorescence = SpeciesLibrary.default()[self.indicator_key].fluorescence
        assert fluorescence is not None
        return (
            f"Determine the apparent pKa of {name}, a fluorescent pH probe, in the lab's "
            "buffers, by its fluorescence (reader_read_fluorescence): it need not be the "
            "published value (ionic strength, medium and lot move it). Its acid form is "
            f"excited near {indicator(self.indicator_key).peak_nm['acid']:.0f} nm, its base form "
            f"near {indicator(self.indicator_key).peak_nm['base']:.0f} nm; both emit near "
            f"{fluorescence.emission_nm:.0f} nm (the library's maxima). {PROBE} holds its stock "
            f"('{labels[PROBE]}').{screened} Buffers in the reservoir: {buffers}; the ± is one "
            f"standard deviation of the real pH. Water at {WATER}, a waste trough at "
            f"{WASTE}. lh_get_deck shows the deck: two 96-well plates, tip racks, the "
            "plate reader and a spectrometer. Probe added to a buffer takes the buffer's pH. "
            "Submit once with submit_fluor_pka: the pKa and its standard uncertainty (one "
            "standard deviation, everything included). Reward: exp(-CRPS / "
            f"{SCALE}), with CRPS "
            "the continuous ranked probability score of a normal distribution with your pKa and "
            "uncertainty against the true apparent pKa, times how sound the experiment was (a "
            "blank, the probe's fluorescence read where it is all in its acid form and where "
            "it is all in its base form, replicate wells)."
        )

    @tool(name="submit_fluor_pka", destructive=True)
    async def submit(
        self,
        pka: Annotated[float, Arg("The probe's apparent pKa in these buffers.", within="pka")],
        uncertainty: Annotated[
            float, Arg("Its standard uncertainty: one standard deviation.", within="uncertainty")
        ],
    ) -> Submitted:
        """Submit the probe's apparent pKa and its uncertainty. Ends the episode."""
        self.submission = pka_submission(pka, uncertainty)
        return {"received": True}

    @staticmethod
    def _submit(session: Session, pka: float, sd: float) -> None:
        value = pka if math.isfinite(pka) else 7.0
        spread = sd if math.isfinite(sd) and sd >= 0 else 1.0
        caller(session)(
            "submit_fluor_pka",
            pka=round(min(max(value, 0.0), 14.0), 4),
            uncertainty=round(min(spread, 14.0), 4),
        )

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.fluor_pka_expert.fluorescence_pka` (survey, a dilution, buffers in
        triplicate read as excitation spectra, a global two-form fit)."""
        from labtools.simulators.families.fluor_pka_expert import fluorescence_pka

        pka, sd = fluorescence_pka(
            caller(session),
            stock=PROBE,
            water=WATER,
            key=self.indicator_key,
            wells=self.budget.wells,
        )
        self._submit(session, pka, sd)

    def naive(self, session: Session) -> None:
        """The stock 1 in 10 in each buffer, one well each, one unblanked fluorescence reading
        at the base form's excitation and the reader's own gain; the pH where the reading
        crosses half its maximum; half a buffer step as the uncertainty."""
        from labtools.simulators.families.equilibrium_expert import half_max_ph
        from labtools.simulators.families.fluor_pka_expert import one_in_ten
        from labtools.simulators.tasks.indicator_pka import buffers_of

        call = caller(session)
        buffers = buffers_of(call("lh_get_deck")["labels"])
        values = one_in_ten(call, PROBE, buffers, self.indicator_key)
        ph = np.array([p for _, p, _ in buffers])
        step = float(np.median(np.diff(ph)))
        self._submit(session, half_max_ph(ph, values), step / 2.0)

    def no_controls(self, session: Session) -> None:
        """Shortcut: :func:`~.fluor_pka_expert.uncontrolled`: the stock 1 in 10 once in the
        buffer each side of the library's pKa, read at the base form's excitation at the
        reader's own gain, the nominal autofluorescence taken off; their ratio against the
        library's forms' ε there (Henderson-Hasselbalch, nominal pH). No blank, replicate or
        pure form."""
        from labtools.simulators.families.fluor_pka_expert import uncontrolled

        pka, sd = uncontrolled(caller(session), stock=PROBE, key=self.indicator_key)
        self._submit(session, pka, sd)


class FluorPka(Equilibrium):
    """A fluorescent probe's apparent pKa in the lab's buffers (:mod:`.fluor_pka`)."""

    id = "fluor_pka"
    title = "Determine a fluorescent pH probe's apparent pKa by fluorescence, with its uncertainty"
    members = ()  # equilibrium's task is read by absorbance
    task = FluorPkaTask
    LEVEL = LEVEL
    rubric_of = staticmethod(_rubric)

    def structures(self) -> list[str]:
        return list(_structures())

    def held_out(self, structure: str) -> bool:
        keys = structure.split("+")
        if HELD_OUT_SPECIES & set(keys[:-1]):
            return True
        screen_kind = analyte(keys[1]).kind if len(keys) == 3 else None
        return (screen_kind, spacing(keys[-1])) in HELD_OUT_COMBINATIONS

    def title_of(self, probe: str, screen: str | None) -> str:
        return f"The apparent pKa of {probe} by fluorescence" + (
            f", screened with {screen}" if screen else ""
        )


@functools.cache
def _structures() -> list[str]:
    """Every probe with every buffer set that fits it, unscreened and with each screen: screen
    by screen (none first), buffer set by buffer set."""
    out = []
    screens = {key: probe_screens(key) for key in PROBES}
    for key in PROBES:
        for screen in (None, *screens[key]):
            for buffers in BUFFER_SETS:
                if not buffers_fit(key, buffers):
                    continue
                out.append(f"{key}+{buffers}" if screen is None else f"{key}+{screen}+{buffers}")
    return out
