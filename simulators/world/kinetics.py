"""Enzyme kinetics in the world's containers, integrated exactly as virtual time passes.

Whenever the world's clock advances by Δt, every container holding an enzyme (or a substrate
that hydrolyses by itself) reacts over Δt. The step is kept and run in a container when it is
next looked at (the world's ``contents`` and ``peek``; ``hidden_truth`` runs them all first):
each kept step in turn, with the arithmetic it would have had at its own time, so the amounts
are the very same, and a well no one looks at again (a read plate's wells while the next
plate runs) costs nothing. Per container, with concentrations in M and the volume constant
within a step::

    dS/dt = −kcat'·E(t)·S / (K' + S) − k_s·S,      E(t) = E₀·exp(−k_d·t)

An inhibitor at concentration I (not consumed) with constants Kic (binds free enzyme) and Kiu
(binds the enzyme–substrate complex) gives K' = Km·(1 + I/Kic)/(1 + I/Kiu) and
kcat' = kcat/(1 + I/Kiu): competitive Kiu = ∞, uncompetitive Kic = ∞, noncompetitive (pure)
Kic = Kiu = Ki. Without k_s the equation separates into the integrated Michaelis–Menten law

    K'·ln(S₀/S) + (S₀ − S) = Φ,      Φ = kcat'·E₀·(1 − e^(−k_d·Δt)) / k_d

solved for the substrate converted by Newton's method from the side where it converges
monotonically (:func:`converted`). Φ adds up over consecutive steps, so the result does not
depend on how the clock's advances split a span of time. Spontaneous hydrolysis is applied
first, exactly, as a first-order step (Lie splitting: with k_s ~ 1e-8 s⁻¹ the splitting error
is below k_s·Δt of the product, 1e-5 of it for a 15-minute step, far below what a reading
resolves). Product forms mole for mole; active enzyme decays.

Priors live in ``simulators/data/kinetics.toml``; each seed draws the values once, as hidden
truth under ``kinetics/<species>`` (plain dicts of floats, so trainers and leak tests see them).
Those are the enzyme's reference constants, per active site, at the assay's nominal conditions:
what a task scores against. The wells run on the constants *at work*
(:meth:`Kinetics.at_work`): kcat times the enzyme lot's activity (active sites per labelled
active site, ``kinetics/<enzyme>/lot``), and Km, kcat and Ki times the day's factors (the
assay's real temperature, pH and ionic strength, ``kinetics/<species>/day``), all log-normal
around 1 with the spreads of ``kinetics.toml``. No measurement in one episode separates them
from the reference constants: they set the precision a sound protocol reaches.

Temperature: the reference constants hold at 25 °C (``REFERENCE_C``). A container away from it
(a plate warmed in the reader: the world's ``Thermal``) runs on kcat(T), Km(T) and kd(T) of
:mod:`.kinetics_temperature`, constant within a step (the world splits the steps while
temperatures change).
"""

from __future__ import annotations

import math
import threading
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from labtools.simulators.world.kinetics_temperature import (
    REFERENCE_C,
    TemperaturePrior,
    at_temperature,
)
from labtools.simulators.world.mixture import Mixture
from labtools.simulators.world.species import SpeciesLibrary

__all__ = [
    "MECHANISMS",
    "EnzymePrior",
    "InhibitorPrior",
    "Kinetics",
    "KineticsData",
    "apparent_constants",
    "converted",
]

#: the inhibition mechanisms a prior may draw from
MECHANISMS = ("competitive", "noncompetitive", "uncompetitive")
#: amounts are nmol and volumes µL: nmol/µL · 1e-3 is molar
_NMOL_PER_UL_TO_MOLAR = 1e-3
_NEWTON_STEPS = 200
#: steps kept before every container runs them and they are forgotten (bounds the memory of a
#: world that runs long between resets)
_MOST_STEPS_KEPT = 4096

Hidden = Callable[[str, Callable[[np.random.Generator], Any]], Any]


def _log_uniform(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    low, high = bounds
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def _log_normal(rng: np.random.Generator, sd: float) -> float:
    """A factor exp(N(0, sd²)): 1 exactly for ``sd`` 0."""
    return float(np.exp(rng.normal(0.0, sd))) if sd > 0.0 else 1.0


def _spread(raw: Any, where: str) -> float:
    """A log-normal spread (sd of ln, ≥ 0); 0 when not given."""
    sd = float(raw) if raw is not None else 0.0
    if not (math.isfinite(sd) and sd >= 0.0):
        raise ValueError(f"{where}: a spread needs to be a finite sd of ln ≥ 0, not {raw}")
    return sd


def _bounds(raw: Any, where: str) -> tuple[float, float]:
    low, high = (float(x) for x in raw)
    if not 0 < low <= high:
        raise ValueError(f"{where}: a prior range needs 0 < low ≤ high, not {raw}")
    return low, high


@dataclass(frozen=True)
class EnzymePrior:
    """An enzyme, the reaction it catalyses and the ranges its constants are drawn from."""

    key: str
    substrate: str
    product: str
    km_mm: tuple[float, float]
    kcat_per_s: tuple[float, float]
    half_life_h: tuple[float, float]
    #: sd of ln of the lot's active sites per labelled active site
    lot_sd: float = 0.0
    #: sd of ln of the day's factors on Km and on kcat
    day_km_sd: float = 0.0
    day_kcat_sd: float = 0.0
    #: how kcat, Km and kd depend on temperature; ``None``: they do not
    temperature: TemperaturePrior | None = None

    def draw(self, rng: np.random.Generator) -> dict[str, float]:
        """Hidden truth: ``km_molar`` (M), ``kcat_per_s`` and ``kd_per_s`` (inactivation)."""
        km = _log_uniform(rng, self.km_mm) * 1e-3
        kcat = _log_uniform(rng, self.kcat_per_s)
        half_life_s = _log_uniform(rng, self.half_life_h) * 3600.0
        return {"km_molar": km, "kcat_per_s": kcat, "kd_per_s": math.log(2.0) / half_life_s}

    def draw_lot(self, rng: np.random.Generator) -> dict[str, float]:
        """The lot's ``activity``: active sites per labelled active site (dimensionless)."""
        return {"activity": _log_normal(rng, self.lot_sd)}

    def draw_day(self, rng: np.random.Generator) -> dict[str, float]:
        """The day's factors on Km (``km``) and kcat (``kcat``), dimensionless."""
        return {"km": _log_normal(rng, self.day_km_sd), "kcat": _log_normal(rng, self.day_kcat_sd)}


@dataclass(frozen=True)
class InhibitorPrior:
    """A reversible inhibitor of ``enzyme``; its mechanism and Ki are drawn per seed."""

    key: str
    enzyme: str
    mechanisms: tuple[str, ...]
    ki_mm: tuple[float, float]
    #: sd of ln of the day's factor on Ki
    day_ki_sd: float = 0.0

    def draw(self, rng: np.random.Generator) -> dict[str, Any]:
        """Hidden truth: ``mechanism`` (one of :data:`MECHANISMS`) and ``ki_molar`` (M)."""
        mechanism = self.mechanisms[int(rng.integers(len(self.mechanisms)))]
        return {"mechanism": mechanism, "ki_molar": _log_uniform(rng, self.ki_mm) * 1e-3}

    def draw_day(self, rng: np.random.Generator) -> dict[str, float]:
        """The day's factor on Ki (``ki``), dimensionless."""
        return {"ki": _log_normal(rng, self.day_ki_sd)}


@dataclass(frozen=True)
class KineticsData:
    """The reactions of ``kinetics.toml``: enzymes, spontaneous hydrolyses, inhibitors."""

    enzymes: dict[str, EnzymePrior]
    #: substrate → (product, first-order rate constant in s⁻¹)
    spontaneous: dict[str, tuple[str, float]]
    inhibitors: dict[str, InhibitorPrior]

    @classmethod
    @cache
    def default(cls) -> KineticsData:
        text = (
            resources.files("labtools.simulators").joinpath("data/kinetics.toml").read_text("utf-8")
        )
        return cls.parse(tomllib.loads(text))

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> KineticsData:
        enzymes = {
            key: EnzymePrior(
                key,
                entry["substrate"],
                entry["product"],
                _bounds(entry["km_mM"], f"enzyme.{key}.km_mM"),
                _bounds(entry["kcat_per_s"], f"enzyme.{key}.kcat_per_s"),
                _bounds(entry["half_life_h"], f"enzyme.{key}.half_life_h"),
                _spread(entry.get("lot_activity_sd"), f"enzyme.{key}.lot_activity_sd"),
                _spread(entry.get("day_km_sd"), f"enzyme.{key}.day_km_sd"),
                _spread(entry.get("day_kcat_sd"), f"enzyme.{key}.day_kcat_sd"),
                TemperaturePrior.parse(entry["temperature"], f"enzyme.{key}.temperature")
                if "temperature" in entry
                else None,
            )
            for key, entry in raw.get("enzyme", {}).items()
        }
        spontaneous = {
            key: (entry["product"], float(entry["spontaneous_per_s"]))
            for key, entry in raw.get("substrate", {}).items()
        }
        inhibitors = {}
        for key, entry in raw.get("inhibitor", {}).items():
            mechanisms = tuple(entry["mechanisms"])
            unknown = set(mechanisms) - set(MECHANISMS)
            if not mechanisms or unknown:
                raise ValueError(f"inhibitor.{key}: mechanisms must be among {MECHANISMS}")
            inhibitors[key] = InhibitorPrior(
                key,
                entry["enzyme"],
                mechanisms,
                _bounds(entry["ki_mM"], f"inhibitor.{key}"),
                _spread(entry.get("day_ki_sd"), f"inhibitor.{key}.day_ki_sd"),
            )
        return cls(enzymes, spontaneous, inhibitors)

    def known_to(self, species: SpeciesLibrary) -> KineticsData:
        """Only the reactions whose species are all in ``species``."""
        enzymes = {
            k: e
            for k, e in self.enzymes.items()
            if all(s in species for s in (k, e.substrate, e.product))
        }
        return KineticsData(
            enzymes,
            {
                k: (p, rate)
                for k, (p, rate) in self.spontaneous.items()
                if k in species and p in species
            },
            {k: i for k, i in self.inhibitors.items() if k in species and i.enzyme in enzymes},
        )


def apparent_constants(
    km: float, kcat: float, inhibitors: list[tuple[str, float, float]]
) -> tuple[float, float]:
    """(K', kcat') under ``inhibitors``, each ``(mechanism, Ki in M, I in M)``; exclusive
    binding, so the terms I/Ki add."""
    free = bound = 0.0  # Σ I/Kic and Σ I/Kiu
    for mechanism, ki, level in inhibitors:
        if mechanism in ("competitive", "noncompetitive"):
            free += level / ki
        if mechanism in ("uncompetitive", "noncompetitive"):
            bound += level / ki
    return km * (1.0 + free) / (1.0 + bound), kcat / (1.0 + bound)


def converted(s0: float, km: float, phi: float) -> float:
    """Substrate converted (unit of ``s0``) under Michaelis–Menten kinetics with ∫V dt = ``phi``:
    the x in [0, s0) with ``km·ln(s0/(s0 − x)) + x = phi``; all three in the same unit, ≥ 0.

    Below half conversion Newton's method runs on x (log1p keeps small conversions exact);
    above it on ln(s0 − x) (the remainder may be vanishingly small). Each function is monotone
    and convex or concave, so Newton's method started on the far side of the root converges
    monotonically.
    """
    if not (s0 > 0.0 and km > 0.0 and phi > 0.0):
        return 0.0
    a, f = s0 / km, phi / km  # in units of km
    if f <= math.log(2.0) + 0.5 * a:  # at most half converted: h(x) = −ln(1 − x/a) + x − f
        x = min(f, -a * math.expm1(-f), 0.5 * a)  # an upper bound of the root
        for _ in range(_NEWTON_STEPS):
            h = -math.log1p(-x / a) + x - f
            step = h / (1.0 / (a - x) + 1.0)
            x -= step
            if step <= 1e-15 * x:
                return km * x
    else:  # remainder r = e^u: g(u) = ln a − u + a − e^u − f, decreasing and concave
        u = math.log(0.5 * a)  # above the root
        log_a = math.log(a)
        for _ in range(_NEWTON_STEPS):
            r = math.exp(u)
            step = (log_a - u + a - r - f) / (1.0 + r)  # ≤ 0 right of the root
            u += step
            if -step <= 1e-15 * max(1.0, abs(u)):
                return km * (a - math.exp(u))
    raise ArithmeticError(f"Michaelis–Menten step did not converge (S0/Km {a:g}, Φ/Km {f:g})")


class Kinetics:
    """Reacts the world's containers as time passes (:meth:`advance` is the clock's watcher).

    ``contents``: the world's containers by name (the live mapping); ``hidden``: the world's
    per-seed hidden draw. Keeps no state of its own, so a world reset needs nothing here.
    """

    def __init__(
        self,
        contents: Mapping[str, Mixture],
        hidden: Hidden,
        species: SpeciesLibrary,
        data: KineticsData | None = None,
    ) -> None:
        self._contents = contents
        self._hidden = hidden
        self.data = (data or KineticsData.default()).known_to(species)
        #: the steps since the containers were last settled, and how many of them each
        #: container has run (none listed: none)
        self._steps: list[_Step] = []
        self._at: dict[str, int] = {}
        #: the steps are run by whichever thread looks first (the lab's, or a live view's
        #: reading a well's colour): one at a time, or a step could run twice in a container
        self._settling = threading.RLock()

    @property
    def data(self) -> KineticsData:
        """The reactions this world runs (replaceable: what depends on them follows)."""
        return self._data

    @data.setter
    def data(self, data: KineticsData) -> None:
        self._data = data
        self._inhibitors_of: dict[str, list[InhibitorPrior]] = {}
        for inhibitor in data.inhibitors.values():
            self._inhibitors_of.setdefault(inhibitor.enzyme, []).append(inhibitor)
        # a container's reactions run in this order: the hydrolyses, then the enzymes, each
        # as the data lists them; (rank, species) of every species that starts one
        ranked = [*data.spontaneous, *data.enzymes]
        self._rank = {key: (rank, key) for rank, key in enumerate(ranked)}
        made = {p for p, _ in data.spontaneous.values()}
        made |= {e.product for e in data.enzymes.values()}
        #: whether a reaction makes what starts another: then every reaction is tried in every
        #: reactive container, in order (a product made within the step reacts within it)
        self._chained = not made.isdisjoint(self._rank)

    # -- hidden truth --------------------------------------------------------------------------
    def enzyme(self, key: str) -> dict[str, float]:
        """The hidden constants of enzyme ``key`` for this seed (drawn on first use)."""
        return self._hidden(f"kinetics/{key}", self.data.enzymes[key].draw)

    def inhibition(self, key: str) -> dict[str, Any]:
        """The hidden mechanism and Ki of inhibitor ``key`` for this seed."""
        return self._hidden(f"kinetics/{key}", self.data.inhibitors[key].draw)

    def at_work(self, key: str, celsius: float = REFERENCE_C) -> dict[str, float]:
        """The constants enzyme ``key``'s wells run on this seed at ``celsius``: ``km_molar``
        (M) and ``kcat_per_s`` per *labelled* active site (the lot's activity and the day's
        factors applied), ``kd_per_s`` as drawn at the reference temperature; away from it,
        through the enzyme's temperature laws (none: unchanged)."""
        prior = self.data.enzymes[key]
        truth = self.enzyme(key)
        lot = self._hidden(f"kinetics/{key}/lot", prior.draw_lot)
        day = self._hidden(f"kinetics/{key}/day", prior.draw_day)
        work = {
            "km_molar": truth["km_molar"] * day["km"],
            "kcat_per_s": truth["kcat_per_s"] * day["kcat"] * lot["activity"],
            "kd_per_s": truth["kd_per_s"],
        }
        if celsius == REFERENCE_C or prior.temperature is None:
            return work
        return at_temperature(work, self.thermal(key), celsius)

    def thermal(self, key: str) -> dict[str, float]:
        """The hidden temperature constants of enzyme ``key`` for this seed (drawn on first
        use, so runs at the reference temperature draw nothing)."""
        prior = self.data.enzymes[key].temperature
        if prior is None:
            raise KeyError(f"enzyme {key!r} has no temperature data")
        return self._hidden(f"kinetics/{key}/temperature", prior.draw)

    def inhibition_at_work(self, key: str) -> dict[str, Any]:
        """Inhibitor ``key``'s mechanism and its Ki (M) in the wells this seed (the day's
        factor applied)."""
        truth = self.inhibition(key)
        day = self._hidden(f"kinetics/{key}/day", self.data.inhibitors[key].draw_day)
        return {"mechanism": truth["mechanism"], "ki_molar": truth["ki_molar"] * day["ki"]}

    # -- time ----------------------------------------------------------------------------------
    def advance(self, seconds: float, warm: Mapping[str, float] | None = None) -> None:
        """Let ``seconds`` pass in every container that holds something reactive. ``warm``:
        °C of the vessels away from the reference temperature (a container ``"plate_1:A1"``
        is in vessel ``"plate_1"``), constant over the step; the others are at it.

        The step is kept, and run in a container when it is next looked at (:meth:`settle`,
        which the world's ``contents`` and ``peek`` call): every step in turn, with the same
        arithmetic as at the step itself, so the amounts are the very same; a container no
        one looks at again costs nothing."""
        if seconds <= 0.0 or not self._rank:
            return
        with self._settling:
            self._steps.append(_Step(self, seconds, dict(warm) if warm else None))
            if len(self._steps) >= _MOST_STEPS_KEPT:
                self.settle_all()

    def track(self, name: str) -> None:
        """Container ``name`` was filled or made just now: no step so far is its to run."""
        with self._settling:
            self._at[name] = len(self._steps)

    def settle(self, name: str) -> None:
        """Run in container ``name`` the steps since it was last looked at."""
        with self._settling:
            self._settle(name)

    def _settle(self, name: str) -> None:
        steps = self._steps
        at = self._at.get(name, 0)
        if at == len(steps):
            return
        self._at[name] = len(steps)
        mixture = self._contents.get(name)
        if mixture is None or not mixture.amounts or mixture.volume_ul <= 0.0:
            return
        rank = self._rank
        found = [rank[k] for k in mixture.amounts if k in rank]
        if not found:
            return
        vessel = name.partition(":")[0]
        for step in steps[at:]:
            warm = step.warm
            celsius = warm.get(vessel, REFERENCE_C) if warm else REFERENCE_C
            self._react(mixture, step, celsius, found)

    def settle_all(self) -> None:
        """Run every container's pending steps, and forget the steps."""
        with self._settling:
            for name in list(self._contents):
                self._settle(name)
            self._steps.clear()
            self._at.clear()

    def reset(self) -> None:
        """Forget the steps (the world's containers are being rebuilt)."""
        with self._settling:
            self._steps.clear()
            self._at.clear()

    def react(self, mixture: Mixture, seconds: float, celsius: float = REFERENCE_C) -> None:
        """Let ``seconds`` (≥ 0) pass in ``mixture`` at ``celsius``: spontaneous hydrolysis,
        then each enzyme on its substrate; active enzyme decays."""
        if seconds > 0.0 and mixture.volume_ul > 0.0:
            found = [self._rank[k] for k in mixture.amounts if k in self._rank]
            self._react(mixture, _Step(self, seconds), celsius, found)

    def _react(
        self, mixture: Mixture, step: _Step, celsius: float, found: list[tuple[int, str]]
    ) -> None:
        """The step's reactions in ``mixture``; ``found``: (rank, species) of the species in it
        that start one."""
        if self._chained:
            found = list(self._rank.values())
        elif len(found) > 1:
            found.sort()
        amounts = mixture.amounts
        hydrolysis, enzymes = step.hydrolysis(), self.data.enzymes
        for _, key in found:
            amount = amounts.get(key, 0.0)
            if amount <= 0.0:
                continue
            if key in hydrolysis:
                product, fraction = hydrolysis[key]
                lost = amount * fraction
                amounts[key] = amount - lost
                amounts[product] = amounts.get(product, 0.0) + lost
            else:
                prior = enzymes[key]
                self._catalyse(amounts, mixture.volume_ul, key, prior, amount, step, celsius)

    def _catalyse(
        self,
        amounts: dict[str, float],
        volume_ul: float,
        key: str,
        prior: EnzymePrior,
        enzyme: float,
        step: _Step,
        celsius: float,
    ) -> None:
        """One enzyme over the step at ``celsius``: its substrate turned over, its activity
        decayed."""
        to_molar = _NMOL_PER_UL_TO_MOLAR / volume_ul
        km, kcat, lost, per_enzyme = step.enzyme(key, celsius)
        exposure = enzyme * to_molar * per_enzyme  # ∫E dt, M·s
        amounts[key] = enzyme * (1.0 - lost)
        substrate = amounts.get(prior.substrate, 0.0)
        if substrate <= 0.0:
            return
        present = [
            (step.inhibition(i.key), amounts[i.key] * to_molar)
            for i in self._inhibitors_of.get(key, ())
            if amounts.get(i.key, 0.0) > 0.0
        ]
        if present:  # without inhibitors apparent_constants gives km and kcat exactly
            km, kcat = apparent_constants(
                km, kcat, [(t["mechanism"], t["ki_molar"], level) for t, level in present]
            )
        # converted() < S₀ exactly; the min only absorbs the rounding of S₀/Km·Km
        done = min(converted(substrate * to_molar, km, kcat * exposure) / to_molar, substrate)
        amounts[prior.substrate] = substrate - done
        amounts[prior.product] = amounts.get(prior.product, 0.0) + done


class _Step:
    """What every container shares over one step of ``seconds``: the hydrolysed fractions,
    and each enzyme's and inhibitor's constants at work (each worked out on first use, so that
    a step no container runs costs next to nothing, and hidden truth is drawn when and as the
    containers first need it)."""

    __slots__ = (
        "_enzymes",
        "_hydrolysis",
        "_inhibitors",
        "_spontaneous",
        "kinetics",
        "seconds",
        "warm",
    )

    def __init__(
        self, kinetics: Kinetics, seconds: float, warm: dict[str, float] | None = None
    ) -> None:
        self.kinetics = kinetics
        self.seconds = seconds
        #: °C of the vessels away from the reference temperature over the step
        self.warm = warm
        self._spontaneous = kinetics.data.spontaneous  # the reactions as of the step
        self._hydrolysis: dict[str, tuple[str, float]] | None = None
        self._enzymes: dict[tuple[str, float], tuple[float, float, float, float]] = {}
        self._inhibitors: dict[str, dict[str, Any]] = {}

    def hydrolysis(self) -> dict[str, tuple[str, float]]:
        """Substrate → (product, fraction hydrolysed over the step)."""
        if self._hydrolysis is None:
            seconds = self.seconds
            self._hydrolysis = {
                substrate: (product, -math.expm1(-rate * seconds))
                for substrate, (product, rate) in self._spontaneous.items()
            }
        return self._hydrolysis

    def enzyme(self, key: str, celsius: float) -> tuple[float, float, float, float]:
        """Km (M), kcat (s⁻¹), the fraction of active enzyme lost over the step, and ∫E dt
        per unit of E₀ (s) of enzyme ``key`` at ``celsius``."""
        known = self._enzymes.get((key, celsius))
        if known is None:
            truth = self.kinetics.at_work(key, celsius)
            kd, seconds = truth["kd_per_s"], self.seconds
            lost = -math.expm1(-kd * seconds)
            per_enzyme = lost / kd if kd > 0.0 else seconds
            known = self._enzymes[key, celsius] = (
                truth["km_molar"],
                truth["kcat_per_s"],
                lost,
                per_enzyme,
            )
        return known

    def inhibition(self, key: str) -> dict[str, Any]:
        """Inhibitor ``key``'s mechanism and Ki at work (:meth:`Kinetics.inhibition_at_work`)."""
        known = self._inhibitors.get(key)
        if known is None:
            known = self._inhibitors[key] = self.kinetics.inhibition_at_work(key)
        return known
