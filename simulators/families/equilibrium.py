"""The ``equilibrium`` family: an acid-base indicator's apparent pKa in the lab's buffers, with
its uncertainty, from absorbance spectra.

Structures: ``<indicator>+<buffers>`` or ``<indicator>+<screen>+<buffers>`` over
:data:`INDICATORS` (the library's two-form species whose forms the plate reader tells apart),
:data:`BUFFER_SETS` (which of the library's pH 2-11 buffers are on the deck: eight one unit
apart, or five two units apart) and an optional *screen*, a pH-independent dye in the
indicator's stock that absorbs where one of its forms does (a screened indicator, as methyl
orange with indigo carmine [L]). A buffer set is offered with an indicator only where it holds
a buffer on each side of the indicator's pKa that keeps it in one form
(:data:`PURE_UNITS`) whatever the pKa's spread. Levels (:data:`LEVEL`) set the stock's
strength, the screen's share, the reader's noise and the budget.

Hidden truth per seed: the indicator's apparent pKa in these buffers, the library's value off by
:data:`PKA_SPREAD` (1 sd); each buffer's real pH, its label off by :data:`BUFFER_PH_SD` (as
``indicator_pka``'s buffers); the stock's concentration (its strongest form's optical density
neat, log-uniform in the level's range) and the screen's (its share of one form's peak,
log-uniform in the level's range); the screen's dye lot (``species.toml``); the instruments.
The library's pKa and spectra (:meth:`EquilibriumTask.inversion`,
:meth:`EquilibriumTask.no_controls`) do not give the apparent pKa; spectra across the buffers,
fitted as two forms (:mod:`labtools.simulators.tasks.pka_fit`), do.

Reward: raw = exp(−CRPS(N(p̂, σ̂²), pKa′) / :data:`SCALE`), a strictly proper score of the
stated pKa and uncertainty, times the process rubric (a blank, the indicator read all in its
acid form and all in its base form, replicate wells), weight :data:`PROCESS_WEIGHT`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import numpy as np

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.family import InstanceName
from labtools.session.process import Component, Episode, Rubric, blanks, replicates
from labtools.simulators.families.equilibrium_parts import (
    BUFFER_COLUMNS,
    BUFFER_SETS,
    BUFFERS,
    HELD_OUT_COMBINATIONS,
    HELD_OUT_INDICATORS,
    INDICATOR,
    INDICATORS,
    LEVEL,
    PKA_SPREAD,
    PKA_TRUNCATE,
    PROCESS_WEIGHT,
    PURE_UNITS,
    SCALE,
    buffer_label,
    buffers_fit,
    indicator,
    overlapped_form,
    real_buffer_ph,
    screens_of,
    spacing,
    stock_label,
)
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import (
    HELD_OUT_PAIRS,
    HELD_OUT_SPECIES,
    analyte,
)
from labtools.simulators.families.task import STOCK_UL, WASTE, WATER, WELL_UL, FamilyTask
from labtools.simulators.families.task import log_uniform as draw_log_uniform
from labtools.simulators.tasks.indicator_pka import (
    PkaLimits,
    buffers_of,
    pka_score,
    pka_submission,
)
from labtools.simulators.tasks.scripting import caller, nominal_path_cm
from labtools.simulators.world import Mixture, SpeciesLibrary
from labtools.simulators.world.species import Species
from labtools.tool import Arg, tool

__all__ = [
    "BUFFER_SETS",
    "INDICATORS",
    "LEVEL",
    "Equilibrium",
    "EquilibriumTask",
    "pure_form_reads",
]


def _apparent_pka(episode: Episode, instance: str) -> float | None:
    hidden = getattr(episode.shared.get("world"), "hidden_truth", None)
    truth = hidden().get(f"task/{instance}") if callable(hidden) else None
    return float(truth["pka"]) if isinstance(truth, Mapping) and "pka" in truth else None


def pure_form_reads(episode: Episode, labelled: Mapping[str, float], pka: float) -> float:
    """Half for the indicator (:data:`INDICATOR`) read in a buffer (``labelled``: container →
    labelled pH) at least :data:`PURE_UNITS` below ``pka`` (its acid form's spectrum), half for
    one at least that far above (its base form's)."""
    phs = []
    for reading in episode.of([INDICATOR]):
        held = [(reading.contents.get(c, 0.0), c) for c in labelled]
        volume, container = max(held, default=(0.0, ""))
        if volume > 0:
            phs.append(labelled[container])
    acid = any(p <= pka - PURE_UNITS for p in phs)
    base = any(p >= pka + PURE_UNITS for p in phs)
    return 0.5 * acid + 0.5 * base


def _rubric(instance: str, labelled: Mapping[str, float]) -> Rubric:
    solvents = (WATER, *labelled)

    def forms(episode: Episode) -> float:
        pka = _apparent_pka(episode, instance)
        return 0.0 if pka is None else pure_form_reads(episode, labelled, pka)

    return Rubric(
        (
            Component(
                "blank",
                0.3,
                lambda e: blanks(e, [INDICATOR], solvents),
                "a water, buffer or empty-well blank on each plate the indicator was read on",
            ),
            Component(
                "pure_forms",
                0.4,
                forms,
                "the indicator read all in its acid form (a buffer ≥ 1.28 pH units below its "
                "pKa) and all in its base form (≥ 1.28 above): half each",
            ),
            Component(
                "replicates",
                0.3,
                lambda e: replicates(e, [INDICATOR], copies=3, conditions=min(5, len(labelled))),
                "five indicator-in-buffer conditions (all of a set of fewer) in triplicate",
            ),
        ),
        weight=PROCESS_WEIGHT,
        note="The stated uncertainty is scored by the outcome itself (CRPS, strictly proper).",
    )


# -- the task ----------------------------------------------------------------------------------
class EquilibriumTask(FamilyTask):
    """One instance of :class:`Equilibrium` (its class attributes set by
    :meth:`Equilibrium.build`)."""

    limits = PkaLimits()
    indicator_key: ClassVar[str]
    screen_key: ClassVar[str | None]
    #: container → pH (its label's) of each buffer on the deck, most acidic first
    buffer_ph: ClassVar[Mapping[str, int]]

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, float]:
        """The apparent pKa and the stock's concentrations (µM) this seed drew (trainers and
        scoring only)."""
        return dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        ind = indicator(self.indicator_key)
        shift = float(rng.standard_normal())
        while abs(shift) > PKA_TRUNCATE:
            shift = float(rng.standard_normal())
        path = nominal_path_cm(WELL_UL)
        od = draw_log_uniform(rng, self.level.od)
        stock_um = od / (ind.epsilon[ind.strong] * path) * 1e6
        out = {"pka": ind.pka + PKA_SPREAD * shift, "indicator_um": stock_um}
        if self.screen_key is not None:
            form, _ = overlapped_form(self.indicator_key, self.screen_key)
            wanted = draw_log_uniform(rng, self.level.interferent_ratio) * ind.epsilon[form]
            screen = SpeciesLibrary.default()[self.screen_key]
            out["screen_um"] = wanted * stock_um / float(screen.absorptivity(ind.peak_nm[form]))
        return out

    def prepare(self, lab: Lab, seed: int) -> None:
        """The indicator's apparent pKa and each buffer's real pH into the world's library; the
        stock and the buffers into the reservoir, their labels on the deck."""
        world = lab.shared["world"]
        library = SpeciesLibrary.default()
        truth = self.truth(lab)
        world.species.put(dataclasses.replace(library[self.indicator_key], pka=truth["pka"]))
        labels = {}
        for container, ph in self.buffer_ph.items():
            key = BUFFERS[ph][0]
            real = world.hidden(f"species/{key}/ph", real_buffer_ph(float(ph)))
            world.species.put(_with_ph(library[key], real))
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
        molar = {self.indicator_key: truth["indicator_um"] * 1e-6}
        if self.screen_key is not None:
            molar[self.screen_key] = truth["screen_um"] * 1e-6
        labels[INDICATOR] = stock_label(self.indicator_key, self.screen_key)
        world.fill(INDICATOR, Mixture.solution(STOCK_UL, molar), labels[INDICATOR])
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update(labels)

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        ind = indicator(self.indicator_key)
        screened = ""
        if self.screen_key is not None:
            screened = (
                f" The stock also holds {analyte(self.screen_key).name}, a dye that absorbs "
                "whatever the pH (a screened indicator)."
            )
        buffers = "; ".join(f"{c}: '{labels[c]}'" for c in self.buffer_ph)
        return (
            f"Determine the apparent pKa of {ind.name}, an acid-base indicator, in the lab's "
            f"buffers: it need not be the published value (ionic strength, medium and lot move "
            f"it). {INDICATOR} holds its stock ('{labels[INDICATOR]}').{screened} Buffers in "
            f"the reservoir: {buffers}; the ± is one standard deviation of the real pH. Water "
            f"at {WATER}, a waste trough at {WASTE}. lh_get_deck shows the deck: two 96-well "
            "plates, tip racks, the plate reader and a spectrometer. Indicator added to a "
            "buffer takes the buffer's pH. Submit once with submit_equilibrium: the pKa and "
            "its standard uncertainty (one standard deviation, everything included). Reward: "
            f"exp(-CRPS / {SCALE}), with CRPS the continuous ranked probability score of a "
            "normal distribution with your pKa and uncertainty against the true apparent pKa, "
            "times how sound the experiment was (a blank, the indicator read where it is all "
            "in its acid form and where it is all in its base form, replicate wells)."
        )

    @tool(name="submit_equilibrium", destructive=True)
    async def submit(
        self,
        pka: Annotated[float, Arg("The indicator's apparent pKa in these buffers.", within="pka")],
        uncertainty: Annotated[
            float, Arg("Its standard uncertainty: one standard deviation.", within="uncertainty")
        ],
    ) -> Submitted:
        """Submit the indicator's apparent pKa and its uncertainty. Ends the episode."""
        self.submission = pka_submission(pka, uncertainty)
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        return pka_score(self.submission, self.truth(lab)["pka"], SCALE)

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.equilibrium_expert.apparent_pka` (survey, buffers in triplicate, a global
        two-form fit)."""
        from labtools.simulators.families.equilibrium_expert import apparent_pka

        pka, sd = apparent_pka(
            caller(session),
            stock=INDICATOR,
            water=WATER,
            published_pka=indicator(self.indicator_key).pka,
            wells=self.budget.wells,
        )
        self._submit(session, pka, sd)

    def naive(self, session: Session) -> None:
        """The stock 1 in 10 in each buffer, one well each, one unblanked reading at the
        library's peak of the base form; the pH where the reading crosses half its maximum
        (linear interpolation); half a buffer step as the uncertainty."""
        from labtools.simulators.families.equilibrium_expert import half_max_ph, one_in_ten

        call = caller(session)
        buffers = buffers_of(call("lh_get_deck")["labels"])
        wavelength = indicator(self.indicator_key).peak_nm["base"]
        values = one_in_ten(call, INDICATOR, buffers, wavelength_nm=wavelength)
        ph = np.array([p for _, p, _ in buffers])
        step = float(np.median(np.diff(ph)))
        self._submit(session, half_max_ph(ph, values), step / 2.0)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; the middle of the labelled buffers' pH range, ± a uniform
        prior's sd over it (from the labels alone)."""
        ph = [p for _, p, _ in buffers_of(caller(session)("lh_get_deck")["labels"])]
        low, high = min(ph), max(ph)
        self._submit(session, (low + high) / 2.0, (high - low) / math.sqrt(12.0))

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the library's pKa, ± the published spread the package states
        (:data:`PKA_SPREAD`)."""
        self._submit(session, indicator(self.indicator_key).pka, PKA_SPREAD)

    def no_controls(self, session: Session) -> None:
        """Shortcut: :func:`~.equilibrium_expert.uncontrolled`: the stock 1 in 10 once in each
        buffer within a unit of the library's pKa, no blank, replicate or pure form; each
        spectrum unmixed with the library's spectra of the forms (and the screen's)."""
        from labtools.simulators.families.equilibrium_expert import uncontrolled

        library = SpeciesLibrary.default()
        ind = library[self.indicator_key]
        basis = {"acid": ind.forms["acid"], "base": ind.forms["base"]}
        screen = None if self.screen_key is None else library[self.screen_key]
        pka, sd = uncontrolled(
            caller(session),
            stock=INDICATOR,
            published_pka=indicator(self.indicator_key).pka,
            forms=basis,
            screen=screen,
        )
        self._submit(session, pka, sd)

    @staticmethod
    def _submit(session: Session, pka: float, sd: float) -> None:
        value = pka if math.isfinite(pka) else 7.0
        spread = sd if math.isfinite(sd) and sd >= 0 else 1.0
        caller(session)(
            "submit_equilibrium",
            pka=round(min(max(value, 0.0), 14.0), 4),
            uncertainty=round(min(spread, 14.0), 4),
        )


def _with_ph(species: Species, ph: float) -> Species:
    return dataclasses.replace(species, ph=ph)


class Equilibrium(LevelledFamily):
    """An indicator's apparent pKa in the lab's buffers (:mod:`.equilibrium`)."""

    id = "equilibrium"
    title = "Determine an indicator's apparent pKa in the lab's buffers, with its uncertainty"
    members: ClassVar[tuple[str, ...]] = ("indicator_pka",)
    task = EquilibriumTask
    LEVEL: ClassVar[Mapping[int, Any]] = LEVEL

    def structures(self) -> list[str]:
        return list(_structures())

    def held_out(self, structure: str) -> bool:
        keys = structure.split("+")
        species = keys[:-1]
        if (HELD_OUT_SPECIES | HELD_OUT_INDICATORS) & set(species):
            return True
        kinds = {SpeciesLibrary.default()[k].kind for k in species}
        if any(pair <= kinds for pair in HELD_OUT_PAIRS):
            return True
        screen_kind = analyte(keys[1]).kind if len(keys) == 3 else None
        return (screen_kind, spacing(keys[-1])) in HELD_OUT_COMBINATIONS

    #: the process rubric of an instance (its name) and its buffers (container → labelled pH)
    rubric_of = staticmethod(_rubric)

    def title_of(self, probe: str, screen: str | None) -> str:
        """An instance's title before its buffers' range, from the names of its indicator and
        its screen."""
        return f"The apparent pKa of {probe}" + (f" screened with {screen}" if screen else "")

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        keys = structure.split("+")
        name = str(InstanceName(self.id, level, structure))
        phs = BUFFER_SETS[keys[-1]]
        containers = dict(zip(BUFFER_COLUMNS, phs, strict=False))
        screen = keys[1] if len(keys) == 3 else None
        title = self.title_of(indicator(keys[0]).name, screen and analyte(screen).name)
        return {
            "title": title + f" (buffers pH {phs[0]}-{phs[-1]})",
            "rubric": self.rubric_of(name, {c: float(p) for c, p in containers.items()}),
            "indicator_key": keys[0],
            "screen_key": screen,
            "buffer_ph": containers,
        }


@functools.cache
def _structures() -> list[str]:
    """Every indicator with every buffer set that fits it, unscreened and with each screen:
    screen by screen (none first), buffer set by buffer set, indicator by indicator, so that
    any run of consecutive structures (a level's seeds cycle over them) spans the indicators."""
    from labtools.simulators.families.parts import ANALYTES

    screens = {key: set(screens_of(key)) for key in INDICATORS}
    out = []
    for screen in (None, *ANALYTES):
        for buffers in BUFFER_SETS:
            for key in INDICATORS:
                if not buffers_fit(key, buffers):
                    continue
                if screen is None:
                    out.append(f"{key}+{buffers}")
                elif screen in screens[key]:
                    out.append(f"{key}+{screen}+{buffers}")
    return out
