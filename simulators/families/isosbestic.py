"""The ``isosbestic`` family: an acid-base indicator lot's isosbestic point in this lab (nm),
with its uncertainty, and the absorptivity there (M⁻¹ cm⁻¹), from the indicator's spectra in
the lab's buffers. Every mixture of the two forms reads the same at the crossing, whatever the
pH: A = c·l·(ε_acid + f·(ε_base − ε_acid)) does not depend on the base fraction f where
ε_acid = ε_base.

Structures: ``<indicator>+<buffers>`` over the ``equilibrium`` family's indicators
(:mod:`.equilibrium_parts`) and the ``ph`` family's buffer sets that hold both pure forms
(:data:`~.ph_parts.PH_BUFFER_SETS`, :func:`~.ph_parts.fits`). Two indicators' forms cross at a
small angle (:data:`~.isosbestic_parts.SHALLOW`). Levels set the stock's strength at the
crossing (:data:`~.isosbestic_parts.ISO_OD`), the reader's noise and the budget (equilibrium's
:data:`~.equilibrium_parts.LEVEL`).

Hidden truth per seed: the indicator's lot, drawn as the ``ph`` family draws it (each form's ε
off by :data:`~.ph_parts.LOT_EPSILON_SD`, both bands shifted by :data:`~.ph_parts.
LOT_SHIFT_NM_SD`): it moves the crossing by about a nm (:data:`~.isosbestic_parts.
LOT_ISO_SD_NM`) and ε there by 2-3 %; its apparent pKa (:data:`~.equilibrium_parts.
PKA_SPREAD`); each buffer's real pH; the stock's real concentration (its certified label ±
:data:`~.isosbestic_parts.STOCK_TOLERANCE`); the instruments. The library's point
(:meth:`IsosbesticTask.no_controls`) misses by the lot's spread.

Reward: raw = exp(−CRPS_λ / :data:`~.isosbestic_parts.SCALE_NM`) · exp(−CRPS_lnε /
:data:`~.isosbestic_parts.SCALE_LN_EPSILON`), CRPS of normal forecasts (ε's on its logarithm,
its stated sd over it), times the process rubric (a blank, both pure forms, replicates),
weight :data:`~.isosbestic_parts.PROCESS_WEIGHT`.
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
    real_buffer_ph,
)
from labtools.simulators.families.isosbestic_parts import (
    LOT_ISO_SD_NM,
    SCALE_LN_EPSILON,
    SCALE_NM,
    STOCK_TOLERANCE,
    crossing,
    held_out,
    library_crossing,
    rubric,
    stock_label_um,
    structures,
)
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.ph_parts import (
    LOT_EPSILON_SD,
    LOT_SHIFT_NM_SD,
    PH_BUFFER_SETS,
    buffer_containers,
)
from labtools.simulators.families.task import STOCK_UL, WASTE, WATER, FamilyTask
from labtools.simulators.tasks.scripting import caller
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.simulators.world import SpeciesLibrary
from labtools.simulators.world.species import Species
from labtools.tool import Arg, tool
from labtools.units import Range

__all__ = ["Isosbestic", "IsosbesticLimits", "IsosbesticTask"]


@dataclass(frozen=True)
class IsosbesticLimits:
    """Sane bounds of a submission."""

    wavelength_nm: Range = Range(200.0, 1000.0)
    wavelength_uncertainty_nm: Range = Range(0.0, 100.0)
    epsilon: Range = Range(0.0, 1e6)
    epsilon_uncertainty: Range = Range(0.0, 1e6)


class IsosbesticTask(FamilyTask):
    """One instance of :class:`Isosbestic` (its class attributes set by
    :meth:`Isosbestic.build`)."""

    limits = IsosbesticLimits()
    indicator_key: ClassVar[str]
    #: container → labelled pH of each buffer on the deck, most acidic first
    buffer_ph: ClassVar[Mapping[str, int]]
    #: the stock's labelled concentration (µM)
    stock_um: ClassVar[float]

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, float]:
        """The lot's isosbestic point (nm) and ε there, its apparent pKa and its draws
        (trainers and scoring only)."""
        drawn = dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))
        at, epsilon = crossing(self._lot(drawn), near=library_crossing(self.indicator_key)[0])
        return {**drawn, "isosbestic_nm": at, "epsilon": epsilon}

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        shift = float(rng.standard_normal())
        while abs(shift) > PKA_TRUNCATE:
            shift = float(rng.standard_normal())
        return {
            "pka": indicator(self.indicator_key).pka + PKA_SPREAD * shift,
            "acid_factor": math.exp(LOT_EPSILON_SD * float(rng.standard_normal())),
            "base_factor": math.exp(LOT_EPSILON_SD * float(rng.standard_normal())),
            "shift_nm": LOT_SHIFT_NM_SD * float(rng.standard_normal()),
        }

    def _lot(self, drawn: Mapping[str, float]) -> Species:
        species = SpeciesLibrary.default()[self.indicator_key]
        forms = {
            name: form.varied(drawn[f"{name}_factor"], drawn["shift_nm"])
            for name, form in species.forms.items()
        }
        return dataclasses.replace(species, pka=drawn["pka"], forms=forms)

    def prepare(self, lab: Lab, seed: int) -> None:
        """The lot and each buffer's real pH into the world's library; the certified stock and
        the buffers into the reservoir, their labels on the deck."""
        world = lab.shared["world"]
        library = SpeciesLibrary.default()
        world.species.put(self._lot(lab.shared["world"].hidden(f"task/{self.id}", self._draw)))
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
        labels[INDICATOR] = (
            f"{indicator(self.indicator_key).name} stock in water, {self.stock_um:g} µM ±1 % "
            "(certified)"
        )
        world.fill_stock(
            {
                "well": INDICATOR,
                "species": self.indicator_key,
                "concentration_uM": self.stock_um,
                "volume_ul": STOCK_UL,
                "tolerance": STOCK_TOLERANCE,
                "label": labels[INDICATOR],
            }
        )
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update(labels)

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        ind = indicator(self.indicator_key)
        buffers = "; ".join(f"{c}: '{labels[c]}'" for c in self.buffer_ph)
        return (
            f"Find the isosbestic point of {ind.name}, an acid-base indicator, in this lab: the "
            "wavelength (nm) where its acid and base forms absorb alike, so that its spectrum "
            "reads the same at every pH, and its molar absorptivity there (M^-1 cm^-1). "
            f"{INDICATOR} holds the indicator's stock; its label (lh_get_deck) gives its "
            "certified concentration, ± one standard deviation. This lot's forms and its "
            "apparent pKa need not be the published ones (the lot, ionic strength and medium "
            f"move them). Buffers in the reservoir: {buffers}; the ± is one standard deviation "
            f"of the real pH. Water at {WATER}, a waste trough at {WASTE}. lh_get_deck shows "
            "the deck: two 96-well plates, tip racks, the plate reader (its spectrum mode takes "
            "a start, a stop and a step) and a spectrometer. A little indicator added to a "
            "buffer takes its pH. Submit once with submit_isosbestic: the wavelength and its "
            "standard uncertainty (nm), the absorptivity there and its standard uncertainty "
            "(one standard deviation, everything included). Reward: "
            f"exp(-CRPS_nm / {SCALE_NM}) x exp(-CRPS_ln / {SCALE_LN_EPSILON}), with CRPS the "
            "continuous ranked probability score of a normal distribution with your value and "
            "uncertainty against the truth (the absorptivity's on its natural logarithm, its "
            "uncertainty relative), times how sound the experiment was (a blank, the indicator "
            "read where it is all in its acid form and where it is all in its base form, "
            "replicate wells)."
        )

    @tool(name="submit_isosbestic", destructive=True)
    async def submit(
        self,
        wavelength_nm: Annotated[float, Arg("The isosbestic point (nm).", within="wavelength_nm")],
        wavelength_uncertainty_nm: Annotated[
            float,
            Arg("Its standard uncertainty (nm).", within="wavelength_uncertainty_nm"),
        ],
        epsilon: Annotated[
            float, Arg("The molar absorptivity there (M^-1 cm^-1).", within="epsilon")
        ],
        epsilon_uncertainty: Annotated[
            float, Arg("Its standard uncertainty (M^-1 cm^-1).", within="epsilon_uncertainty")
        ],
    ) -> Submitted:
        """Submit the isosbestic point and the absorptivity there, each with its standard
        uncertainty. Ends the episode."""
        values = {
            "wavelength_nm": wavelength_nm,
            "wavelength_uncertainty_nm": wavelength_uncertainty_nm,
            "epsilon": epsilon,
            "epsilon_uncertainty": epsilon_uncertainty,
        }
        for name, value in values.items():
            if not math.isfinite(value):
                raise OutOfRange(f"the {name} must be a finite number", field=f"/{name}")
        if epsilon <= 0:
            raise OutOfRange("the absorptivity must be positive", field="/epsilon")
        self.submission = {k: float(v) for k, v in values.items()}
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        s = self.submission
        truth = self.truth(lab)
        crps_nm = crps_normal(
            s["wavelength_nm"], s["wavelength_uncertainty_nm"], truth["isosbestic_nm"]
        )
        crps_ln = crps_normal(
            math.log(s["epsilon"]),
            s["epsilon_uncertainty"] / s["epsilon"],
            math.log(truth["epsilon"]),
        )
        raw = math.exp(-crps_nm / SCALE_NM) * math.exp(-crps_ln / SCALE_LN_EPSILON)
        return {
            "raw": raw,
            "error_nm": s["wavelength_nm"] - truth["isosbestic_nm"],
            "error_ln_epsilon": math.log(s["epsilon"] / truth["epsilon"]),
            "crps_nm": crps_nm,
            "crps_ln_epsilon": crps_ln,
        }

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.isosbestic_expert.crossing_scan`: the indicator in the buffers in
        triplicate, blanked, scanned finely about the published point; the crossing where the
        spectra's slope against the base fraction vanishes, ε from the certified label."""
        from labtools.simulators.families.isosbestic_expert import crossing_scan

        at, _ = library_crossing(self.indicator_key)
        self._submit(
            session,
            *crossing_scan(
                caller(session),
                published_nm=at,
                published_pka=indicator(self.indicator_key).pka,
                wells=self.budget.wells,
            ),
        )

    def naive(self, session: Session) -> None:
        """:func:`~.isosbestic_expert.two_wells`: the stock 1 in 10 in the most acidic and
        the most basic buffer, one coarse unblanked spectrum each, their crossing interpolated."""
        from labtools.simulators.families.isosbestic_expert import two_wells

        self._submit(session, *two_wells(caller(session)))

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; halfway between the forms' published peaks, ± a uniform
        prior's sd over that span; ε a quarter of the forms' peaks' geometric mean, ± its
        own size."""
        ind = indicator(self.indicator_key)
        low, high = sorted(ind.peak_nm.values())
        epsilon = math.sqrt(ind.epsilon["acid"] * ind.epsilon["base"]) / 4.0
        self._submit(session, (low + high) / 2.0, (high - low) / math.sqrt(12.0), epsilon, epsilon)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the library's isosbestic point and ε there, ± the lot's
        published spread (:data:`~.isosbestic_parts.LOT_ISO_SD_NM`, 3 %)."""
        at, epsilon = library_crossing(self.indicator_key)
        self._submit(session, at, LOT_ISO_SD_NM, epsilon, LOT_EPSILON_SD * epsilon)

    def no_controls(self, session: Session) -> None:
        """Shortcut: :func:`~.isosbestic_expert.uncontrolled`: the library's isosbestic
        point; the stock 1 in 10 in one buffer read once there, no blank or replicate, the
        nominal plate's OD off, over the nominal path and the label."""
        from labtools.simulators.families.isosbestic_expert import uncontrolled

        at, _ = library_crossing(self.indicator_key)
        self._submit(session, *uncontrolled(caller(session), published_nm=at))

    @staticmethod
    def _submit(session: Session, at: float, sd: float, epsilon: float, epsilon_sd: float) -> None:
        def clean(value: float, default: float, low: float, high: float) -> float:
            return round(min(max(value if math.isfinite(value) else default, low), high), 4)

        caller(session)(
            "submit_isosbestic",
            wavelength_nm=clean(at, 500.0, 200.0, 1000.0),
            wavelength_uncertainty_nm=clean(sd, 10.0, 0.0, 100.0),
            epsilon=clean(epsilon, 1e4, 1.0, 1e6),
            epsilon_uncertainty=clean(epsilon_sd, 1e4, 0.0, 1e6),
        )


class Isosbestic(LevelledFamily):
    """An indicator lot's isosbestic point and ε there, from its spectra in the lab's buffers
    (:mod:`.isosbestic`)."""

    id = "isosbestic"
    title = "Find an indicator's isosbestic point and its absorptivity there, with uncertainties"
    task = IsosbesticTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        key, buffers = structure.split("+")
        name = str(InstanceName(self.id, level, structure))
        containers = buffer_containers(buffers)
        phs = PH_BUFFER_SETS[buffers]
        return {
            "title": f"The isosbestic point of {indicator(key).name} (buffers pH {phs[0]}-"
            f"{phs[-1]})",
            "rubric": rubric(name, {c: float(p) for c, p in containers.items()}),
            "indicator_key": key,
            "buffer_ph": containers,
            "stock_um": stock_label_um(key, level),
        }
