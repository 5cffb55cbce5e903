"""Maximum-likelihood fit of each channel's delivery per tip type from :func:`gravimetric_run`.

The delivery model is the simulator's own (``simulators/pipetting.py``): a delivery of set
volume ``V`` is ``N(V (1 + β) + δ, a² + (c V)²)``. The balance reads each cumulative weighing
with noise ``N(0, σ_r²)`` (its repeatability) and rounds it to its readability ``d`` (variance
``d²/12``); water leaves the open vessel at ``r(F) = r₀ / (1 − κ F)`` grams a second at fill
``F`` (µL): evaporation limited by diffusion up the vessel's empty part and out of its mouth,
whose resistance falls linearly as the vessel fills (exact for
:class:`~labtools.simulators.balance.physics.Evaporation`; ``κ`` and ``r₀`` are fitted, so any
vessel's geometry will do). A reading difference ``m`` over ``Δt`` around a delivery gives the
delivered volume ``y = (m + r(F̄) Δt) · Z(T)`` (µL; ``Z`` ISO 8655-6's factor, µL per mg, at the
recorded temperature).

Fitting, all by likelihood:

1. the balance, from the idle intervals (no delivery between two readings): ``ln r₀, κ`` and
   ``ln σ_r`` jointly, the intervals' covariance ``(σ_r² + d²/12) D Dᵀ`` (``D`` the readings'
   differences: adjacent intervals share a reading); the observed information for the
   covariance of all three (:func:`.estimates.observed_covariance`);
2. each channel and tip type on its own deliveries: ``a, c`` (and ``ln σ_r``, held near step 1's
   by its Gaussian likelihood there) by restricted ML (REML: ``β, δ`` by generalised least
   squares at every step, so the variances are not estimated low for the two means), the
   covariance ``diag(a² + (c V)² + 2 (σ_r² + d²/12) Z²) + J Σ_evap Jᵀ``: the balance's noise on
   both readings and the evaporation correction's uncertainty (``J`` its slope in ``ln r₀, κ``,
   shared by every delivery);
3. intervals: ``β, δ`` from the GLS covariance with Student's t quantile for the
   Welch–Satterthwaite degrees of freedom of the per-volume variances, plus ``Z``'s
   uncertainty (the temperature's) on the scale; ``a, c`` by the (REML) profile likelihood;
   ``σ_r`` on the log scale from step 1; the draft shield's humidity by the profile likelihood
   of step 1's intervals under the simulator's evaporation (the record's vessel geometry), with
   the temperature's uncertainty (the vapour's saturation density: 6 % per °C) added.

The balance's scale is its adjustment (conventional mass, reference density 8000 kg/m³, as
``Z`` assumes); a real balance's sensitivity tolerance (a few ppm) is below every interval here
and not carried [A].
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg, optimize, stats

from labtools.simulators.balance.physics import (
    Evaporation,
    buoyancy_factor,
    water_density,
    z_factor,
)
from labtools.simulators.calibration.estimates import (
    Z95,
    Estimate,
    entry,
    log_ci,
    normal_ci,
    observed_covariance,
    profile_ci,
)
from labtools.simulators.pipetting import tip_key

__all__ = ["BalanceFit", "fit_balance", "fit_gravimetric"]

_MG = 1000.0  # mg per g
#: κ in the optimiser's units (per 10 mL)
_KAPPA_UNIT = 1e-4


@dataclass(frozen=True)
class _Intervals:
    """The reading differences of a run: per interval (reading i−1 to i)."""

    diff_g: np.ndarray
    dt_s: np.ndarray
    fill_ul: np.ndarray  # mean fill over the interval
    index: np.ndarray  # the closing reading's index
    weighings: list[Mapping[str, Any]]


@dataclass(frozen=True)
class BalanceFit:
    """The balance and the vessel's evaporation from the idle intervals."""

    log_r0: float  # ln(g/s) at an empty vessel
    kappa: float  # 1/µL
    log_sigma: float  # ln(g), the repeatability
    rounding_var: float  # d²/12 (g²)
    cov: np.ndarray  # of (ln r0, κ / _KAPPA_UNIT, ln σ_r)
    intervals: int

    def rate(self, fill_ul: np.ndarray) -> np.ndarray:
        return math.exp(self.log_r0) / (1.0 - self.kappa * fill_ul)

    def rate_slopes(self, fill_ul: np.ndarray) -> np.ndarray:
        """∂r/∂(ln r0, κ in the optimiser's units), per fill: (n, 2)."""
        r = self.rate(fill_ul)
        return np.stack([r, r * fill_ul / (1.0 - self.kappa * fill_ul) * _KAPPA_UNIT], axis=1)

    @property
    def reading_var(self) -> float:
        return math.exp(2 * self.log_sigma) + self.rounding_var


def _intervals(record: Mapping[str, Any], z_ul_per_mg: float) -> _Intervals:
    w = record["weighings"]
    g = np.array([x["g"] for x in w], dtype=float)
    t = np.array([x["t_s"] for x in w], dtype=float)
    fill = g * _MG * z_ul_per_mg
    return _Intervals(np.diff(g), np.diff(t), 0.5 * (fill[1:] + fill[:-1]), np.arange(1, len(w)), w)


def _idle_covariance(index: np.ndarray) -> np.ndarray:
    """``D Dᵀ`` of the idle intervals: 2 on the diagonal, −1 where two share a reading."""
    m = 2.0 * np.eye(index.size)
    adjacent = np.abs(index[:, None] - index[None, :]) == 1
    return m - adjacent


def fit_balance(record: Mapping[str, Any]) -> BalanceFit:
    """Step 1 of the module docstring."""
    z = z_factor(float(record["temperature_c"]))
    iv = _intervals(record, z)
    idle = np.array([iv.weighings[i]["event"] == "idle" for i in iv.index])
    if idle.sum() < 5:
        raise ValueError("the run has fewer than 5 idle intervals: evaporation is not fitted")
    d, dt, fill = iv.diff_g[idle], iv.dt_s[idle], iv.fill_ul[idle]
    chol = linalg.cho_factor(_idle_covariance(iv.index[idle]))
    logdet_m = 2.0 * float(np.sum(np.log(np.diag(chol[0]))))
    readability = float(record["balance"]["readability_g"])
    rounding = readability**2 / 12.0
    kappa_max = 0.999 / (_KAPPA_UNIT * max(float(fill.max()), 1.0))

    def nll(x: np.ndarray) -> float:
        log_r0, k, log_s = (float(v) for v in x)
        if k >= kappa_max:
            return 1e12
        r = math.exp(log_r0) / (1.0 - k * _KAPPA_UNIT * fill)
        resid = d + r * dt
        var = math.exp(2 * log_s) + rounding
        quad = float(resid @ linalg.cho_solve(chol, resid)) / var
        return 0.5 * (quad + logdet_m + d.size * math.log(var))

    # start: the mean loss rate at κ = 0, the spread of the idle differences
    rate0 = max(float(-np.sum(d) / np.sum(dt)), 1e-9)
    spread = max(float(np.std(d + rate0 * dt)) / math.sqrt(2.0), readability)
    x0 = np.array([math.log(rate0), 0.0, math.log(spread)])
    best = optimize.minimize(nll, x0, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-9})
    best = optimize.minimize(nll, best.x, method="BFGS")
    cov = observed_covariance(nll, best.x)
    log_r0, k, log_s = (float(v) for v in best.x)
    return BalanceFit(log_r0, k * _KAPPA_UNIT, log_s, rounding, cov, int(idle.sum()))


@dataclass
class _Group:
    """One channel and tip type: its deliveries in µL, corrected for evaporation."""

    channel: int
    tip_ul: float
    volume: np.ndarray
    y: np.ndarray
    evap: np.ndarray  # J Σ_evap Jᵀ (µL²)
    balance_scale: float  # 2 Z² (µL² per g² of reading variance, in mg)


class _Model:
    """One group's variances: the likelihood of each test volume's deliveries about their own
    mean (the within-volume contrasts: free of ``β, δ`` whatever they are; REML itself with two
    volumes), with ``ln σ_r``'s Gaussian likelihood from step 1; and the means by GLS."""

    def __init__(self, group: _Group, balance: BalanceFit) -> None:
        self.g = group
        self.rounding = balance.rounding_var
        self.log_s = balance.log_sigma
        self.log_s_sd = math.sqrt(max(float(balance.cov[2, 2]), 1e-12))
        self.x = np.stack([group.volume, np.ones_like(group.volume)], axis=1)
        self.volumes = np.unique(group.volume)
        masks = [group.volume == v for v in self.volumes]
        self.dof = np.array([float(m.sum()) - 1.0 for m in masks])
        self.ss = np.array([float(np.sum((group.y[m] - group.y[m].mean()) ** 2)) for m in masks])

    def reading_var(self, log_s: float) -> float:
        """Both readings' noise around a delivery (µL²)."""
        return (math.exp(2 * log_s) + self.rounding) * self.g.balance_scale

    def cov(self, a: float, c: float, log_s: float) -> np.ndarray:
        var = a * a + (c * self.g.volume) ** 2 + self.reading_var(log_s)
        return np.diag(var) + self.g.evap

    def gls(self, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any]:
        """(β, δ), their covariance and the Cholesky factor."""
        chol = linalg.cho_factor(cov)
        target = self.g.y - self.g.volume
        info = self.x.T @ linalg.cho_solve(chol, self.x)
        means = np.linalg.solve(info, self.x.T @ linalg.cho_solve(chol, target))
        return means, np.linalg.inv(info), chol

    def nll(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """The NLL of (a, c, ln σ_r) and its gradient."""
        a, c, log_s = float(x[0]), float(x[1]), float(x[2])
        z = (log_s - self.log_s) / self.log_s_sd
        if abs(z) > 30.0:  # far outside step 1's interval: only its likelihood, back
            return 0.5 * z * z + 1e6, np.array([0.0, 0.0, z / self.log_s_sd])
        noise = self.reading_var(log_s)
        v = a * a + (c * self.volumes) ** 2 + noise
        w = 0.5 * (self.dof / v - self.ss / v**2)  # ∂NLL/∂v per volume
        value = 0.5 * float(np.sum(self.dof * np.log(v) + self.ss / v)) + 0.5 * z * z
        d_noise = 2.0 * math.exp(2 * log_s) * self.g.balance_scale
        grad = np.array(
            [
                float(np.sum(w)) * 2.0 * a,
                float(np.sum(w * self.volumes**2)) * 2.0 * c,
                float(np.sum(w)) * d_noise + z / self.log_s_sd,
            ]
        )
        return value, grad

    def units(self) -> np.ndarray:
        v = float(self.volumes[0])
        return np.array([max(1e-3, 1e-2 * v), 1e-3, 1.0])

    def fit(self) -> np.ndarray:
        """(a, c, ln σ_r) by the likelihood's minimum (BFGS in scaled coordinates: the
        likelihood depends on a² and c² only, so their signs are free and dropped)."""
        unit = self.units()
        best = optimize.minimize(
            lambda x: self._scaled(x, unit), self._start() / unit, jac=True, method="BFGS"
        )
        out = np.asarray(best.x * unit)
        out[:2] = np.abs(out[:2])
        return out

    def _scaled(self, x: np.ndarray, unit: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = self.nll(x * unit)
        return value, grad * unit

    def _start(self) -> np.ndarray:
        """a and c from the per-volume sample variances less the balance's."""
        var = self.ss / np.maximum(self.dof, 1.0) - self.reading_var(self.log_s)
        lo, hi = float(self.volumes[0]), float(self.volumes[-1])
        c2 = max((var[-1] - var[0]) / (hi * hi - lo * lo), 1e-8) if hi > lo else 1e-8
        a2 = max(var[0] - c2 * lo * lo, (1e-2 * lo) ** 2)
        return np.array([math.sqrt(a2), math.sqrt(c2), self.log_s])

    def profile(self, which: int, value: float, at: np.ndarray) -> float:
        """The NLL with parameter ``which`` (0: a, 1: c) at ``value``, the other two
        re-fitted from ``at``."""
        unit = self.units()
        others = [i for i in range(3) if i != which]

        def inner(x: np.ndarray) -> tuple[float, np.ndarray]:
            full = np.empty(3)
            full[which] = value
            full[others] = x * unit[others]
            f, grad = self.nll(full)
            return f, grad[others] * unit[others]

        best = optimize.minimize(inner, at[others] / unit[others], jac=True, method="BFGS")
        return float(best.fun)


def _groups(record: Mapping[str, Any], balance: BalanceFit, z: float) -> list[_Group]:
    iv = _intervals(record, z)
    scale = z * _MG  # µL per g of reading
    by_pair: dict[tuple[int, float], list[int]] = {}
    for k, i in enumerate(iv.index):
        w = iv.weighings[i]
        if w["event"] == "delivery":
            by_pair.setdefault((int(w["channel"]), float(w["tip_ul"])), []).append(k)
    sigma_evap = balance.cov[:2, :2]
    out = []
    for (channel, tip), ks in sorted(by_pair.items()):
        rows = np.array(ks)
        fill, dt = iv.fill_ul[rows], iv.dt_s[rows]
        y = (iv.diff_g[rows] + balance.rate(fill) * dt) * scale
        jac = balance.rate_slopes(fill) * dt[:, None] * scale
        volume = np.array([float(iv.weighings[iv.index[j]]["volume_ul"]) for j in ks])
        out.append(_Group(channel, tip, volume, y, jac @ sigma_evap @ jac.T, 2.0 * scale * scale))
    return out


def _satterthwaite(model: _Model, cov: np.ndarray, inv_info: np.ndarray, chol: Any) -> np.ndarray:
    """Welch–Satterthwaite degrees of freedom of β̂ and δ̂: each volume's variance rests on its
    own deliveries."""
    weights = inv_info @ model.x.T @ linalg.cho_solve(chol, np.eye(model.g.y.size))  # (2, n)
    var = np.diag(cov)
    out = []
    for row in weights:
        parts, dof = [], []
        for v in np.unique(model.g.volume):
            mask = model.g.volume == v
            parts.append(float(np.sum(row[mask] ** 2 * var[mask])))
            dof.append(max(int(mask.sum()) - 1, 1))
        total = sum(parts)
        out.append(total**2 / sum(p * p / n for p, n in zip(parts, dof, strict=True)))
    return np.array(out)


def _channel_estimates(model: _Model, z_log_sd: float) -> dict[str, Estimate]:
    theta = model.fit()
    a, c, log_s = (float(v) for v in theta)
    cov = model.cov(a, c, log_s)
    means, inv_info, chol = model.gls(cov)
    beta, delta = (float(v) for v in means)
    dof = _satterthwaite(model, cov, inv_info, chol)
    widen = [float(stats.t.ppf(0.975, n)) / Z95 for n in dof]
    beta_sd = math.hypot(math.sqrt(inv_info[0, 0]) * widen[0], (1 + beta) * z_log_sd)
    delta_sd = math.hypot(math.sqrt(inv_info[1, 1]) * widen[1], delta * z_log_sd)
    v = model.g.volume
    sd_low = math.sqrt(max(float(np.var(model.g.y[v == v.min()], ddof=1)), 1e-12))
    sd_high = math.sqrt(max(float(np.var(model.g.y[v == v.max()], ddof=1)), 1e-12))
    a_hi = 6.0 * sd_low + 2.0 * a
    c_hi = 6.0 * sd_high / float(v.max()) + 2.0 * c
    a_lo, a_up = profile_ci(lambda x: model.profile(0, x, theta), a, 0.0, a_hi, rtol=1e-3)
    c_lo, c_up = profile_ci(lambda x: model.profile(1, x, theta), c, 0.0, c_hi, rtol=1e-3)
    prefix = f"liquid_handler.channel_{model.g.channel}.{tip_key(model.g.tip_ul)}"
    how_mean = (
        "gravimetric: GLS at the REML variances, t quantile (Welch-Satterthwaite), with the "
        "balance's noise, the evaporation correction's and Z's uncertainty"
    )
    how_sd = "gravimetric: profile likelihood (REML) with the balance's noise"
    return {
        f"{prefix}.beta": entry(beta, "dimensionless", *normal_ci(beta, beta_sd), how_mean),
        f"{prefix}.delta": entry(delta, "microliter", *normal_ci(delta, delta_sd), how_mean),
        f"{prefix}.a": entry(a, "microliter", a_lo, a_up, how_sd),
        f"{prefix}.c": entry(c, "dimensionless", c_lo, c_up, how_sd),
    }


def _humidity(record: Mapping[str, Any], balance: BalanceFit) -> tuple[float, float, float] | None:
    """The draft shield's humidity under the simulator's evaporation and the record's vessel:
    the profile likelihood of the idle intervals (σ_r held), widened by the temperature's
    uncertainty; ``None`` where the vessel's geometry is not recorded."""
    geometry = record.get("vessel_geometry_mm")
    if not geometry:
        return None
    celsius = float(record["temperature_c"])
    z = z_factor(celsius)
    iv = _intervals(record, z)
    idle = np.array([iv.weighings[i]["event"] == "idle" for i in iv.index])
    d, dt, fill = iv.diff_g[idle], iv.dt_s[idle], iv.fill_ul[idle]
    chol = linalg.cho_factor(_idle_covariance(iv.index[idle]) * balance.reading_var)
    radius, depth = float(geometry["diameter"]) / 2000.0, float(geometry["depth"]) / 1000.0
    area_mm2 = math.pi * (1000.0 * radius) ** 2

    def dry_rate(t: float) -> np.ndarray:
        """Reading grams a second at humidity 0, per interval."""
        evaporation = Evaporation(radius, depth, humidity=0.0)
        heights = np.minimum(fill / area_mm2 / 1000.0, depth)
        rho = water_density(t)
        return np.array([evaporation.rate_g_s(t, h) for h in heights]) * buoyancy_factor(rho)

    base = dry_rate(celsius)

    def nll(humidity: float) -> float:
        resid = d + (1.0 - humidity) * base * dt
        return 0.5 * float(resid @ linalg.cho_solve(chol, resid))

    best = optimize.minimize_scalar(nll, bounds=(-2.0, 1.0), method="bounded")
    h = float(best.x)
    lo, hi = profile_ci(nll, h, -2.0, 1.0, rtol=1e-5)
    # the temperature: h moves as 1 - (1 - h) · base(T) / base(T + dT)
    step = 0.1
    ratio = float(np.sum(dry_rate(celsius + step) * dt) / np.sum(base * dt))
    slope = (1.0 - h) * (ratio - 1.0) / step  # ∂h/∂T
    t_sd = float(record.get("temperature_sd_c", 0.0))
    half = [(h - lo) / Z95, (hi - h) / Z95]
    lo = h - Z95 * math.hypot(half[0], slope * t_sd)
    hi = h + Z95 * math.hypot(half[1], slope * t_sd)
    return h, lo, hi


def fit_gravimetric(record: Mapping[str, Any]) -> dict[str, Any]:
    """Every channel's ``β, δ, a, c`` per tip type of a :func:`gravimetric_run` record, and the
    balance's repeatability and humidity: ``{"parameters", "derived", "not_identified"}``."""
    celsius = float(record["temperature_c"])
    z = z_factor(celsius)
    step = 0.1
    z_log_sd = (
        abs(math.log(z_factor(celsius + step) / z))
        / step
        * float(record.get("temperature_sd_c", 0.0))
    )
    balance = fit_balance(record)
    parameters: dict[str, Estimate] = {}
    for group in _groups(record, balance, z):
        parameters.update(_channel_estimates(_Model(group, balance), z_log_sd))
    model = record["balance"]["model"]
    sigma_mg, lo, hi = log_ci(balance.log_sigma, math.sqrt(balance.cov[2, 2]))
    parameters[f"balance.{model}.repeatability"] = entry(
        sigma_mg * _MG,
        "milligram",
        lo * _MG,
        hi * _MG,
        f"observed information on the log scale, from {balance.intervals} idle intervals",
    )
    not_identified = {
        "liquid_handler.film_fraction": "a tip emptied delivers its calibrated volume whatever "
        "film it keeps",
        "balance.vessel.mass": "the balance was tared with the vessel on its pan, which it "
        "never leaves",
        f"balance.{model}.settling_time": "the run records when each stable reading came, not "
        "when the load changed",
    }
    humidity = _humidity(record, balance)
    if humidity is not None and 0.0 <= humidity[0] <= 1.0:
        parameters["balance.evaporation.humidity"] = entry(
            humidity[0],
            "dimensionless",
            max(humidity[1], 0.0),
            min(humidity[2], 1.0),
            "profile likelihood of the idle intervals under the simulator's evaporation "
            "(the record's vessel), with the temperature's uncertainty",
        )
    else:
        not_identified["balance.evaporation.humidity"] = (
            "no vessel geometry in the record"
            if humidity is None
            else "the vessel loses water faster (or slower) than still-air diffusion allows"
        )
    r0_sd = math.sqrt(balance.cov[0, 0])
    rate, rate_lo, rate_hi = log_ci(balance.log_r0, r0_sd)
    kappa_sd = math.sqrt(balance.cov[1, 1]) * _KAPPA_UNIT
    derived = {
        "balance.evaporation.rate_empty": entry(
            rate * 1e6,
            "microgram / second",
            rate_lo * 1e6,
            rate_hi * 1e6,
            "the idle intervals' loss at an empty vessel (observed information, log scale)",
        ),
        "balance.evaporation.kappa": entry(
            balance.kappa,
            "1 / microliter",
            *normal_ci(balance.kappa, kappa_sd),
            "how the loss grows with the fill: r0 / (1 - kappa F) (observed information)",
        ),
        "liquid_handler.z_factor": entry(
            z,
            "microliter / milligram",
            z * math.exp(-Z95 * z_log_sd),
            z * math.exp(Z95 * z_log_sd),
            f"ISO 8655-6's Z at {celsius:g} °C ({record.get('temperature_from', '')})",
        ),
    }
    return {"parameters": parameters, "derived": derived, "not_identified": not_identified}
