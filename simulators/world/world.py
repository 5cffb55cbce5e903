"""The simulated world the virtual instruments share.

It holds what is physically true and hidden from the agent: the real contents of every container
(volume and composition), the real concentration of every stock, each pipetting channel's bias,
the reader's stray light. Instruments read it and change it; ``lab.state()`` never shows it.
Containers are named as tools name wells: ``"plate_1:A1"``, ``"cuvette"``.
"""

from __future__ import annotations

import inspect
import math
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from labtools.simulators.profile import Profile
from labtools.simulators.published import load_profile
from labtools.simulators.world.clock import VirtualClock
from labtools.simulators.world.kinetics import Kinetics
from labtools.simulators.world.mixture import Mixture
from labtools.simulators.world.species import Batch, Species, SpeciesLibrary
from labtools.simulators.world.streams import Streams
from labtools.simulators.world.thermal import Thermal

__all__ = ["DEFAULT_TOLERANCE", "World"]

T = TypeVar("T")

#: How far a stock's real concentration strays from its label, by how it was made, given the
#: label's stated tolerance ``tol`` (relative, 1 sd; default :data:`DEFAULT_TOLERANCE`):
#:
#: - ``"powder"``: dye powder dissolved as supplied and weighed as if pure: food-dye powders are
#:   >= 85 % total colouring matter (EU Regulation 231/2012; 21 CFR 74: >= 85-87 % pure dye),
#:   commercial lots up to ~95 % [L]: U(0.85, 0.95) × N(1, tol²) whatever the label says
#:   (``tol``: the weighing and the flask);
#: - ``"solution"``: a prepared solution of an assayed lot, N(1, tol²): the lot's certified
#:   content, the weighing and the volumetric flask together (the stock's ``tolerance``, with
#:   its source beside it in the lab's configuration);
#: - ``"exact"``: exactly the label.
_STOCK_GRADES: dict[str, Callable[[np.random.Generator, float], float]] = {
    "powder": lambda rng, tol: float(rng.uniform(0.85, 0.95) * rng.normal(1.0, tol)),
    "solution": lambda rng, tol: float(rng.normal(1.0, tol)),
    "exact": lambda rng, tol: 1.0,
}
#: a prepared solution's relative preparation error (1 sd) when its stock states none [A]:
#: class A volumetric glassware and an analytical balance (ISO 1042: ±0.1 % for a 100 mL
#: flask; 0.1 mg on a 50 mg weighing, 0.2 %) leave ~1 % with the lot's own assay
DEFAULT_TOLERANCE = 0.01


class World:
    """Containers with real contents, a virtual clock, seeded streams and hidden truth; enzymes
    in the containers react as the clock advances (:mod:`labtools.simulators.world.kinetics`),
    at the temperatures of :attr:`thermal` (the room's, 25 °C, unless a reader heats a plate).

    ``stocks``: labelled containers filled at the start, each a mapping with ``well``,
    ``species`` (a key or a ``{key: molar}`` mapping for mixtures), ``concentration_uM`` (the
    label's value, for single species), ``volume_ul``, ``label`` and ``grade``
    (``"powder"``, ``"solution"`` or ``"exact"``).
    ``unknowns``: containers whose composition is drawn per seed: ``well``, ``volume_ul``,
    ``label`` and ``species`` → ``[low_uM, high_uM]`` (drawn log-uniformly).
    ``species``: the library to start from (a copy is kept: ``species`` never changes).
    ``batches``: whether the world's species come in batches that differ from the library's
    entries, as each entry's ``batch`` states (hidden truth ``batch/<key>``: ε factor and band
    shift, drawn per seed; every container holds the same batch of a species).
    ``profile``: the instruments' physical parameters (:mod:`labtools.simulators.profile`): a
    profile, its name or a TOML file; the published one by default. The world's instruments
    take theirs from it, and a dye lot's ε factor and band shift too.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        stocks: Iterable[Mapping[str, Any]] = (),
        unknowns: Iterable[Mapping[str, Any]] = (),
        species: SpeciesLibrary | None = None,
        batches: bool = False,
        profile: Profile | str | Path | None = None,
    ) -> None:
        self.seed = seed
        #: the instruments' physical parameters, values and per-seed priors
        self.profile = load_profile(profile)
        self.streams = Streams(seed)
        self.clock = VirtualClock()
        # the world's own library: components put species drawn per seed into it
        self.species = (species or SpeciesLibrary.default()).copy()
        #: the library's entries of the species drawn in batches, as given
        self._catalogue: dict[str, Species] = {
            key: self.species[key] for key in self.species if batches and self.species[key].batch
        }
        self.labels: dict[str, str] = {}
        self._contents: dict[str, Mixture] = {}
        self._hidden: dict[str, Any] = {}
        self._stocks = tuple(dict(stock) for stock in stocks)
        self._unknowns = tuple(dict(unknown) for unknown in unknowns)
        self._on_reset: list[Callable[[], Callable[[], None] | None]] = []
        #: enzyme reactions in the containers, run as the clock advances (stateless: a reset
        #: needs nothing from it)
        self.kinetics = Kinetics(self._contents, self.hidden, self.species)
        #: the room, heated chambers and the plates in them
        self.thermal = Thermal()
        self.clock.watch(self._let_time_pass)
        self._populate()

    def reset(self, seed: int | None = None) -> None:
        """Return to exactly what ``World(seed, stocks=…, unknowns=…, species=…)`` builds.

        Contents, labels and hidden truth are rebuilt for ``seed`` (``None``: the current seed),
        the clock goes back to 0, every random stream restarts *in place* (holders of
        :meth:`stream` generators keep them), then the :meth:`on_reset` callbacks run.
        """
        seed = self.seed if seed is None else seed
        self.streams.reseed(seed)  # validates the seed before anything changes
        self.seed = seed
        self.clock.reset()
        self.thermal.reset()
        self.labels.clear()
        self._contents.clear()
        self.kinetics.reset()
        self._hidden.clear()
        self._populate()
        for callback in self._live_callbacks():
            callback()

    def on_reset(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after each :meth:`reset`: components that drew hidden truth or
        derived state from the world when built redo it there. Bound methods are held weakly."""
        if inspect.ismethod(callback):
            self._on_reset.append(weakref.WeakMethod(callback))
        else:
            self._on_reset.append(lambda: callback)

    def _live_callbacks(self) -> list[Callable[[], None]]:
        """The :meth:`on_reset` callbacks whose owners still exist (forgetting the others)."""
        pairs = [(ref, ref()) for ref in self._on_reset]
        self._on_reset = [ref for ref, callback in pairs if callback is not None]
        return [callback for _, callback in pairs if callback is not None]

    # -- time --------------------------------------------------------------------------------
    def _let_time_pass(self, seconds: float) -> None:
        """The clock's watcher: reactions at constant temperatures in one step; while
        temperatures change, in steps short against the time constants, each at the
        temperatures of its midpoint."""
        thermal = self.thermal
        remaining = seconds
        while remaining > 0.0:
            if thermal.steady():
                self.kinetics.advance(remaining, thermal.warm)
                return
            step = min(remaining, thermal.step_s())
            thermal.advance(0.5 * step)
            self.kinetics.advance(step, thermal.warm)
            thermal.advance(0.5 * step)
            remaining -= step

    def temperature(self, container: str) -> float:
        """°C of ``container`` (its vessel's: ``"plate_1"`` for ``"plate_1:A1"``)."""
        return self.thermal.temperature(container.partition(":")[0])

    # -- contents ------------------------------------------------------------------------------
    def contents(self, container: str) -> Mixture:
        """The real contents of ``container`` as of now (an empty mixture if nothing was ever
        put in). Reactions run in it when it is looked at: after time passes, look again."""
        mixture = self._contents.get(container)
        if mixture is None:
            mixture = self._contents[container] = Mixture()
            self.kinetics.track(container)
        else:
            self.kinetics.settle(container)
        return mixture

    def peek(self, container: str) -> Mixture:
        """The real contents of ``container`` as of now, for reading only: unlike
        :meth:`contents`, an unknown container gives a new empty mixture and no entry is made.
        Do not change it."""
        mixture = self._contents.get(container)
        if mixture is None:
            return Mixture()
        self.kinetics.settle(container)
        return mixture

    def containers(self) -> list[str]:
        return [k for k, m in self._contents.items() if m.volume_ul > 0]

    def fill(self, container: str, mixture: Mixture, label: str | None = None) -> None:
        """Replace the contents of ``container``."""
        self._contents[container] = mixture
        self.kinetics.track(container)
        if label is not None:
            self.labels[container] = label

    # -- randomness and hidden truth -----------------------------------------------------------
    def stream(self, name: str) -> np.random.Generator:
        """The seeded random stream ``name`` (one per instrument: noise never crosses over)."""
        return self.streams(name)

    def hidden(self, key: str, sample: Callable[[np.random.Generator], T]) -> T:
        """A hidden parameter, drawn once per seed from its own stream ``truth/<key>``."""
        if key not in self._hidden:
            self._hidden[key] = sample(self.streams(f"truth/{key}"))
        return self._hidden[key]

    def hidden_truth(self) -> dict[str, Any]:
        """Every hidden parameter drawn so far, for trainers and scoring (never for agents);
        the reactions time has run so far first (they draw the constants they run on)."""
        self.kinetics.settle_all()
        return dict(self._hidden)

    # -- building ------------------------------------------------------------------------------
    def _populate(self) -> None:
        """Draw the species' batches, fill the stocks and unknowns (drawing their hidden truth)."""
        for key, listed in self._catalogue.items():
            batch = listed.batch
            assert batch is not None  # only species with a batch are catalogued
            factor, shift = self.hidden(f"batch/{key}", self._lot_draw(key, batch))
            self.species.put(listed.batch_of(factor, shift))
        for stock in self._stocks:
            self.fill_stock(stock)
        for unknown in self._unknowns:
            self._fill_unknown(unknown)

    def _lot_draw(
        self, key: str, batch: Batch
    ) -> Callable[[np.random.Generator], tuple[float, float]]:
        """How a lot of ``key`` is drawn: its profile's ``species.<key>.lot.*`` (the species'
        ``batch`` where the profile has no such keys).

        The ε factor is ``epsilon_factor``'s draw (a lot's colouring-matter content below the
        pure dye goes in its prior: ``log_normal`` with ``mu = ln content``), folded below
        ``epsilon_ceiling``: a draw ``f`` above the ceiling ``c`` becomes ``c² / f`` (reflected
        in log space, so no lot reads above the pure dye's reference beyond the ceiling, and a
        factor already below it stays as it is). The published ceiling is far above any draw:
        today's lots."""
        factor, shift = f"species.{key}.lot.epsilon_factor", f"species.{key}.lot.shift"
        if factor not in self.profile or shift not in self.profile:
            return batch.draw
        profile = self.profile
        ceiling_key = f"species.{key}.lot.epsilon_ceiling"
        ceiling = profile[ceiling_key].expected if ceiling_key in profile else math.inf
        if not ceiling > 0.0:
            raise ValueError(f"{ceiling_key} must be a positive factor, not {ceiling}")

        def draw(rng: np.random.Generator) -> tuple[float, float]:
            drawn = profile[factor].draw(rng)
            folded = drawn if drawn <= ceiling else ceiling * ceiling / drawn
            return folded, profile[shift].draw(rng)

        return draw

    def fill_stock(self, stock: Mapping[str, Any]) -> None:
        """Fill a labelled stock (a ``stocks`` entry: ``well``, ``species``,
        ``concentration_uM``, ``volume_ul``, ``label``, ``tolerance``, ``grade``): its real
        concentration is the label's times a preparation error drawn once per seed (hidden
        truth ``stock/<well>/<species>``)."""
        well, volume = stock["well"], float(stock["volume_ul"])
        grade = stock.get("grade", "solution")
        if grade not in _STOCK_GRADES:
            raise ValueError(f"stock {well}: grade must be one of {sorted(_STOCK_GRADES)}")
        species = stock["species"]
        labelled = (
            {species: float(stock["concentration_uM"]) * 1e-6}
            if isinstance(species, str)
            else {k: float(v) for k, v in species.items()}
        )
        tolerance = float(stock.get("tolerance", DEFAULT_TOLERANCE))
        if not 0.0 <= tolerance < 0.5:
            raise ValueError(f"stock {well}: tolerance must be within 0-0.5, not {tolerance!r}")
        draw = _STOCK_GRADES[grade]
        real: dict[str, float] = {}
        for key, molar in labelled.items():
            if key not in self.species:
                raise ValueError(f"stock {well}: unknown species {key!r}")
            factor = self.hidden(f"stock/{well}/{key}", lambda rng: draw(rng, tolerance))
            real[key] = molar * factor
        self.fill(well, Mixture.solution(volume, real), stock.get("label", well))

    def _fill_unknown(self, unknown: Mapping[str, Any]) -> None:
        well = unknown["well"]

        def draw(rng: np.random.Generator) -> dict[str, float]:
            out = {}
            for key, (low, high) in sorted(unknown["species"].items()):
                out[key] = float(np.exp(rng.uniform(np.log(low), np.log(high)))) * 1e-6
            return out

        molar = self.hidden(f"unknown/{well}", draw)
        self.fill(
            well,
            Mixture.solution(float(unknown["volume_ul"]), molar),
            unknown.get("label", "unknown sample"),
        )
