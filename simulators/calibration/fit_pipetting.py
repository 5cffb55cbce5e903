"""Maximum-likelihood fit of each channel's delivery per tip type from :func:`pipetting_run`.

The model is the simulator's own (``simulators/pipetting.py``): one fresh-tip delivery of a set
volume ``v`` is ``N(v (1 + β) + δ, a² + (c v)²)``. A well receives :data:`ROUNDS` such
deliveries in turn on top of its water diluent ``d`` and is read after each; after deliveries
of total ``D`` its dye reads, at wavelength λ,

    A = b + f_s(b + S) − f_s(b),    S = Q · K_λ · D / (d + D) · h(d + D) / 10

(``b`` the well's reading with the diluent only, ``f_s`` the reader's stray light, ``h`` PLR's
height–volume table of the plate, ``K_λ = (1 + ĝ) ε_lib(λ; lot shift) c_label`` the dye's
photometric scale as the reader fit and the label give it, ``Q`` the truth over that). The
path ``h`` makes ``S`` no multiple of ``D``: ``Q`` is no volume scale and is fitted, not
divided out. Linearised in the deliveries about their mean, a well's readings are jointly
normal: the deliveries' covariance ``min(k, l) σ²`` through the signal's slope, plus the
reader's noise (``σ(A)`` from :mod:`.fit_reader`) and the blank's.

Fitting, all by likelihood:

1. each channel and tip type on its own wells at ``Q = 1``: ``β, δ, a, c`` by restricted ML
   (REML: the variance is not estimated low for the two means its few deliveries also fit);
2. ``Q``, shared by every channel: its profile (each channel's means re-fitted by GLS at
   each ``Q``), times its prior ``ln Q ~ N(0, var(ĝ) + tolerance² + ε_batch_sd²)`` (the
   gain's interval, the stock's label, the dye's published lot-to-lot ε spread): ``ln Q̂`` at
   its minimum, its variance from its curvature there; 1 again at ``Q̂``, then 2 once more;
3. intervals (``Q``'s variance the larger of its profile's and its prior's: the data see
   ``Q`` only through the path's curvature in the dose, exact here, biased on a real plate by
   its meniscus and geometry): ``β, δ`` from the observed information ``XᵀΣ⁻¹X`` with
   Student's t quantile for the deliveries' residual degrees of freedom, plus
   ``(∂θ/∂ln Q)² var(ln Q)`` (the slope from the profile); ``a, c`` by the (REML) profile
   likelihood, widened by ``Q``'s interval.

Relative biases between channels (``derived``, ``beta_relative``: each β less the channels'
median) share ``Q`` and are well determined; the absolute ``β`` carries the stock's tolerance
(the gravimetric check, :mod:`.fit_gravimetric`, replaces ``Q`` by the balance's calibration).
Not identified: ``liquid_handler.film_fraction`` (a fresh tip delivers its calibrated volume
whatever its film).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg, optimize, stats

from labtools.simulators.calibration.estimates import Estimate, entry, normal_ci, profile_ci
from labtools.simulators.calibration.fit_reader import (
    DYE_REFERENCE_NM,
    OD_USED_MAX,
    band_ratio,
    plate_layout,
    read_variance,
    stray_reading,
)
from labtools.simulators.published import published
from labtools.simulators.world import SpeciesLibrary

__all__ = ["fit_pipetting", "reader_model", "tip_key"]

#: published stray light when no reader fit is given: the prior's geometric middle [C:
#: plate_reader.toml, log-uniform 1e-5..5e-5]
_STRAY_DEFAULT = math.sqrt(1e-5 * 5e-5)
_Z = float(stats.norm.ppf(0.975))
#: draws of the channels' fitted normals for the sd of β less their median
_RELATIVE_DRAWS = 20_000

ReaderModel = dict[str, float]


def tip_key(tip_ul: float) -> str:
    """The profile's key segment of a tip type: ``tip_300``."""
    return f"tip_{tip_ul:g}"


def _published_mm(key: str) -> float:
    return published()[key].in_unit("millimeter").expected


def reader_model(reader_fit: Mapping[str, Any] | None, species: str) -> ReaderModel:
    """What the pipetting fit takes from a reader fit (published defaults without one)."""
    p = (reader_fit or {}).get("parameters", {})

    def value(key: str, default: float) -> float:
        return float(p[key]["value"]) if key in p else default

    def sd(key: str, default: float) -> float:
        if key not in p:
            return default
        lo, hi = p[key]["ci95"]
        return float(hi - lo) / (2 * _Z)

    return {
        "gain": value("reader.absorbance.gain_error", 0.0),
        "gain_sd": sd("reader.absorbance.gain_error", 0.006 / math.sqrt(3)),
        "stray": value("reader.absorbance.stray_light", _STRAY_DEFAULT),
        "floor": value("reader.absorbance.noise_floor", 0.001),
        "snr0": value("reader.absorbance.snr0", 2000.0),
        "shift": value(f"species.{species}.lot.shift", 0.0),
        # the published offset, not the reader fit's: on stand-in labs that fit's offset
        # scatters by about 0.03 mm, more than its interval says, and an offset 0.04 mm off
        # bends the dose curve this fit reads Q and c from (c found 3-5x the hidden value)
        "offset": _published_mm("reader.path.offset"),
    }


@dataclass(frozen=True)
class _Group:
    """One channel and tip type: every used reading of its wells, stacked."""

    channel: int
    tip_ul: float
    volume: np.ndarray  # per reading: the well's test volume (µL)
    diluent: np.ndarray  # per reading: the well's diluent (µL)
    rounds: np.ndarray  # per reading: deliveries so far
    scale: np.ndarray  # per reading: K_λ (1/cm)
    obs: np.ndarray
    blank: np.ndarray
    noise: np.ndarray  # reader and blank covariance
    shared: np.ndarray  # min(k, l) within a well, 0 across wells
    deliveries: int
    v_low: float


class _Model:
    """The likelihood of one group, with the plate's geometry and the reader's stray light."""

    def __init__(self, group: _Group, layout: Any, stray: float) -> None:
        self.g = group
        self.stray = stray
        self.table_ul = layout.table_ul
        self.table_mm = layout.table_mm
        self.layout = layout

    def _signal(self, dose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Dye fraction × path (cm) and its slope in the dose, per reading."""
        total = self.g.diluent + dose
        height = self.layout.column_mm(total)
        step = np.maximum(1e-3 * total, 1e-3)
        slope_h = (self.layout.column_mm(total + step) - self.layout.column_mm(total - step)) / (
            2 * step
        )
        fraction = dose / total
        value = fraction * height / 10.0
        slope = (self.g.diluent / total**2 * height + fraction * slope_h) / 10.0
        return value, slope

    def terms(
        self, beta: float, delta: float, a: float, c: float, q: float
    ) -> tuple[float, np.ndarray, np.ndarray] | None:
        """(NLL, whitened residuals, whitened mean design, log det Σ / 2) or ``None``."""
        g, s = self.g, self.stray
        mu = g.volume * (1 + beta) + delta
        value, slope = self._signal(g.rounds * mu)
        signal = q * g.scale * value
        mean = g.blank + stray_reading(g.blank + signal, s) - stray_reading(g.blank, s)
        t = 10.0 ** (-(g.blank + signal))
        jac = t / (t + s) * q * g.scale * slope
        sd_v = np.sqrt(a * a + (c * g.volume) ** 2)
        cov = g.noise + np.outer(jac * sd_v, jac * sd_v) * g.shared
        try:
            chol = linalg.cholesky(cov, lower=True)
        except linalg.LinAlgError:
            return None
        z = linalg.solve_triangular(chol, g.obs - mean, lower=True)
        design = linalg.solve_triangular(
            chol, np.stack([jac * g.rounds * g.volume, jac * g.rounds], axis=1), lower=True
        )
        half_logdet = float(np.sum(np.log(np.diag(chol))))
        return 0.5 * float(z @ z) + half_logdet, z, design

    def nll(self, beta: float, delta: float, a: float, c: float, q: float) -> float:
        """Restricted (REML) NLL: the plain one plus half the log determinant of the means'
        information."""
        out = self.terms(beta, delta, a, c, q)
        if out is None:
            return 1e12
        value, _, design = out
        sign, logdet = np.linalg.slogdet(design.T @ design)
        return value + 0.5 * logdet if sign > 0 else 1e12

    def fit(self, q: float, start: np.ndarray | None = None) -> np.ndarray:
        """(β, δ, a, c) at scale ``q`` by REML (L-BFGS-B, scaled coordinates)."""
        v = self.g.v_low
        unit = np.array([1e-3, 1e-3 * v, 1e-3 * v, 1e-3])
        x0 = np.array([0.0, 0.0, 10.0, 3.0]) if start is None else start / unit
        bounds = [(-500.0, 500.0), (-500.0, 500.0), (0.0, 500.0), (0.0, 200.0)]
        best = optimize.minimize(
            lambda x: self.nll(x[0] * unit[0], x[1] * unit[1], x[2] * unit[2], x[3] * unit[3], q),
            x0,
            method="L-BFGS-B",
            bounds=bounds,
        )
        return np.asarray(best.x * unit)

    def means_at(self, theta: np.ndarray, q: float) -> tuple[np.ndarray, float]:
        """(β, δ) re-fitted by GLS at scale ``q`` with ``a, c`` held, and the REML NLL."""
        a, c = float(theta[2]), float(theta[3])
        v = self.g.v_low

        def residuals(x: np.ndarray) -> np.ndarray:
            out = self.terms(x[0] * 1e-3, x[1] * 1e-3 * v, a, c, q)
            return np.full(self.g.obs.size, 1e6) if out is None else out[1]

        x0 = np.array([theta[0] / 1e-3, theta[1] / (1e-3 * v)])
        sol = optimize.least_squares(residuals, x0, method="lm")
        beta, delta = sol.x[0] * 1e-3, sol.x[1] * 1e-3 * v
        return np.array([beta, delta, a, c]), self.nll(beta, delta, a, c, q)


def fit_pipetting(
    record: Mapping[str, Any], reader_fit: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Every channel's ``β, δ, a, c`` per tip type of a :func:`pipetting_run` record:
    ``{"parameters": {key: estimate}, "derived": {...}, "not_identified": {...}}``."""
    species = record["dye"]["species"]
    reader = reader_model(reader_fit, species)
    layout = plate_layout(record["labware"], reader["offset"])
    visible = [float(nm) for nm in record["rounds"][0]["reads"]]
    lib = SpeciesLibrary.default()[species]
    form = lib.forms["default"].varied(1.0, reader["shift"])
    eps_ref = float(form.absorptivity(np.array([DYE_REFERENCE_NM]))[0])
    k_ref = (1 + reader["gain"]) * eps_ref * record["dye"]["label_uM"] * 1e-6
    scale = k_ref * band_ratio(species, np.array(visible), reader["shift"])  # K_λ, 1/cm
    models = [
        _Model(g, layout, reader["stray"]) for g in _groups(record, visible, scale, layout, reader)
    ]
    batch = lib.batch
    sd_prior = math.sqrt(
        reader["gain_sd"] ** 2
        + math.log1p(float(record["dye"]["tolerance"])) ** 2
        + (batch.epsilon_sd if batch is not None else 0.0) ** 2
        + float(published()["reader.path.plate_sd"].expected) ** 2  # this plate's path scale
    )
    thetas = [m.fit(1.0) for m in models]
    log_q, var_q, slopes = 0.0, sd_prior**2, [np.zeros(4) for _ in models]
    for _ in range(2):  # Q's profile with the variances held, then everything at Q̂
        log_q, var_q, slopes = _scale_profile(models, thetas, sd_prior, log_q)
        thetas = [m.fit(math.exp(log_q), t) for m, t in zip(models, thetas, strict=True)]
    q = math.exp(log_q)
    profile_lo, profile_hi = normal_ci(log_q, math.sqrt(var_q))
    # the data pin Q only through the path's curvature in the dose (PLR's table, no
    # meniscus): exact in the simulator, a real plate's geometry would bias it; so the
    # intervals carry the label's and the lot's tolerance, the estimate is the profile's
    var_q = max(var_q, sd_prior**2)
    parameters: dict[str, Estimate] = {}
    relative: dict[str, list[tuple[int, float, float]]] = {}
    for model, theta, slope in zip(models, thetas, slopes, strict=True):
        fitted = _intervals(model, theta, q)
        prefix = f"liquid_handler.channel_{model.g.channel}.{tip_key(model.g.tip_ul)}"
        parameters.update(_estimates(prefix, fitted, slope, var_q))
        relative.setdefault(tip_key(model.g.tip_ul), []).append(
            (model.g.channel, fitted["beta"], fitted["beta_sd"])
        )
    lo, hi = normal_ci(log_q, math.sqrt(var_q))
    return {
        "parameters": parameters,
        "derived": {
            **_relative(relative),
            "dye_scale": entry(
                q,
                "dimensionless",
                math.exp(lo),
                math.exp(hi),
                "the dye's true photometric scale over its label's: the profile's minimum, "
                "the label's and the lot's tolerance as its interval (used by every entry)",
            ),
            "dye_scale_profile": entry(
                q,
                "dimensionless",
                math.exp(profile_lo),
                math.exp(profile_hi),
                "the profile likelihood's own interval (through the path's curvature only)",
            ),
        },
        "not_identified": {
            "liquid_handler.film_fraction": "a fresh tip delivers its calibrated volume "
            "whatever film it keeps"
        },
    }


def _groups(
    record: Mapping[str, Any],
    visible: list[float],
    scale: np.ndarray,
    layout: Any,
    reader: ReaderModel,
) -> list[_Group]:
    rounds = record["rounds"]
    reads = len(rounds[0]["reads"][f"{visible[0]:g}"])

    def mean_read(r: Mapping[str, Any], well: str, nm: float) -> float | None:
        values = [read.get(well) for read in r["reads"][f"{nm:g}"]]
        return None if any(v is None for v in values) else float(np.mean(values))

    by_pair: dict[tuple[int, float], list[Mapping[str, Any]]] = {}
    for delivery in record["deliveries"]:
        key = (int(delivery["channel"]), float(delivery["tip_ul"]))
        by_pair.setdefault(key, []).append(delivery)
    groups = []
    for (channel, tip), deliveries in sorted(by_pair.items()):
        cols: dict[str, list[float]] = {n: [] for n in ("v", "d", "k", "K", "obs", "b", "w", "j")}
        for w_index, delivery in enumerate(deliveries):
            well, v, d = (
                delivery["well"],
                float(delivery["volume_ul"]),
                float(delivery["diluent_ul"]),
            )
            for k in range(1, len(rounds)):
                total = d + k * v
                design = k * v / total * float(layout.column_mm(np.array([total]))[0]) / 10.0
                for j, nm in enumerate(visible):
                    value, blank = mean_read(rounds[k], well, nm), mean_read(rounds[0], well, nm)
                    if value is None or blank is None or scale[j] * design > OD_USED_MAX:
                        continue
                    row = (v, d, k, scale[j], value, blank, w_index, j)
                    for name, x in zip(cols, row, strict=True):
                        cols[name].append(float(x))
        arrays = {n: np.array(x) for n, x in cols.items()}
        same_well = arrays["w"][:, None] == arrays["w"][None, :]
        same_nm = same_well & (arrays["j"][:, None] == arrays["j"][None, :])
        read_var = read_variance(arrays["obs"], reader["floor"], reader["snr0"]) / reads
        blank_sd = np.sqrt(read_variance(arrays["b"], reader["floor"], reader["snr0"]) / reads)
        noise = np.diag(read_var) + same_nm * np.outer(blank_sd, blank_sd)
        shared = same_well * np.minimum.outer(arrays["k"], arrays["k"])
        groups.append(
            _Group(
                channel,
                tip,
                arrays["v"],
                arrays["d"],
                arrays["k"],
                arrays["K"],
                arrays["obs"],
                arrays["b"],
                noise,
                shared,
                (len(rounds) - 1) * len(deliveries),
                float(min(arrays["v"])),
            )
        )
    return groups


def _scale_profile(
    models: list[_Model], thetas: list[np.ndarray], sd_prior: float, centre: float
) -> tuple[float, float, list[np.ndarray]]:
    """ln Q̂ (the profile's minimum, :func:`scipy.optimize.minimize_scalar`), its variance
    (the profile's curvature there) and each group's ∂θ/∂ln Q, with each group's means
    re-fitted by GLS at every ln Q (variances held) and the prior on ln Q."""

    def fits(log_q: float) -> list[tuple[np.ndarray, float]]:
        return [m.means_at(t, math.exp(log_q)) for m, t in zip(models, thetas, strict=True)]

    def profile(log_q: float) -> float:
        return sum(f[1] for f in fits(log_q)) + 0.5 * (log_q / sd_prior) ** 2

    bound = 3.0 * sd_prior if centre == 0.0 else 0.02  # the second pass: near the first
    best = optimize.minimize_scalar(
        profile,
        bounds=(centre - bound, centre + bound),
        method="bounded",
        options={"xatol": 1e-4},
    )
    log_q = float(best.x)
    step = 2e-3
    below, at, above = fits(log_q - step), fits(log_q), fits(log_q + step)
    values = [sum(f[1] for f in x) for x in (below, at, above)]
    curvature = (values[0] - 2 * values[1] + values[2]) / step**2 + 1 / sd_prior**2
    if curvature <= 0:
        raise ValueError("the dye scale's profile likelihood is not convex at its minimum")
    slopes = [(hi[0] - lo[0]) / (2 * step) for lo, hi in zip(below, above, strict=True)]
    return log_q, float(1.0 / curvature), slopes


def _intervals(model: _Model, theta: np.ndarray, q: float) -> dict[str, float]:
    beta, delta, a, c = (float(x) for x in theta)
    out = model.terms(beta, delta, a, c, q)
    if out is None:
        raise ValueError("the fitted covariance is not positive definite")
    cov = np.linalg.pinv(out[2].T @ out[2])
    # the delivery variance rests on few deliveries: Student's t over the normal quantile, with
    # one volume's deliveries less one as its degrees of freedom (a and c are each pinned
    # mostly by one of the test volumes)
    per_volume = model.g.deliveries // len(np.unique(model.g.volume))
    widen = float(stats.t.ppf(0.975, max(per_volume - 1, 1)) / _Z)
    v = model.g.v_low

    def profile_a(value: float) -> float:
        inner = optimize.minimize_scalar(
            lambda cc: model.nll(beta, delta, value, cc, q),
            bounds=(0.0, 0.2),
            method="bounded",
            options={"xatol": 1e-5},
        )
        return float(inner.fun)

    def profile_c(value: float) -> float:
        inner = optimize.minimize_scalar(
            lambda aa: model.nll(beta, delta, aa, value, q),
            bounds=(0.0, 0.5 * v),
            method="bounded",
            options={"xatol": 1e-4 * v},
        )
        return float(inner.fun)

    a_lo, a_hi = profile_ci(profile_a, a, 0.0, 0.5 * v, rtol=1e-4)
    c_lo, c_hi = profile_ci(profile_c, c, 0.0, 0.2, rtol=1e-4)
    return {
        "beta": beta,
        "beta_sd": math.sqrt(cov[0, 0]) * widen,
        "delta": delta,
        "delta_sd": math.sqrt(cov[1, 1]) * widen,
        "a": a,
        "a_lo": a_lo,
        "a_hi": a_hi,
        "c": c,
        "c_lo": c_lo,
        "c_hi": c_hi,
    }


def _estimates(
    prefix: str, f: Mapping[str, float], slope: np.ndarray, var_q: float
) -> dict[str, Estimate]:
    """The profile's entries: the means' intervals carry ``Q̂``'s through their slopes, the
    SD terms' are widened by it."""
    beta_sd = math.sqrt(f["beta_sd"] ** 2 + slope[0] ** 2 * var_q)
    delta_sd = math.sqrt(f["delta_sd"] ** 2 + slope[1] ** 2 * var_q)
    widen = math.exp(_Z * math.sqrt(var_q))
    how_mean = "observed information (REML, t quantile) with the dye scale's interval"
    how_sd = "profile likelihood (REML), widened by the dye scale's interval"
    return {
        f"{prefix}.beta": entry(
            f["beta"], "dimensionless", *normal_ci(f["beta"], beta_sd), how_mean
        ),
        f"{prefix}.delta": entry(
            f["delta"], "microliter", *normal_ci(f["delta"], delta_sd), how_mean
        ),
        f"{prefix}.a": entry(f["a"], "microliter", f["a_lo"] / widen, f["a_hi"] * widen, how_sd),
        f"{prefix}.c": entry(f["c"], "dimensionless", f["c_lo"] / widen, f["c_hi"] * widen, how_sd),
    }


def _relative(rows_by_tip: Mapping[str, list[tuple[int, float, float]]]) -> dict[str, Estimate]:
    """Each channel's β less the median of its tip type's channels: the shared scale cancels,
    and a channel whose well is a defect (its path short: :mod:`.fit_reader`) moves no other
    channel's. The sd of each difference by simulation of the channels' fitted normals
    (:data:`_RELATIVE_DRAWS`, a fixed generator: the same fit gives the same intervals)."""
    out = {}
    rng = np.random.default_rng(0)
    for tip, rows in rows_by_tip.items():
        beta = np.array([b for _, b, _ in rows])
        sd = np.array([s for _, _, s in rows])
        draws = rng.standard_normal((_RELATIVE_DRAWS, beta.size)) * sd
        spread = np.std(draws - np.median(draws, axis=1, keepdims=True), axis=0)
        centre = float(np.median(beta))
        for (channel, b, _), s in zip(rows, spread, strict=True):
            lo, hi = normal_ci(b - centre, float(s))
            out[f"liquid_handler.channel_{channel}.{tip}.beta_relative"] = entry(
                b - centre,
                "dimensionless",
                lo,
                hi,
                "observed information; the scale cancels (against the channels' median)",
            )
    return out
