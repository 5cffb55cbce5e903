"""Maximum-likelihood fit of the plate reader's absorbance parameters from :func:`reader_run`.

The model is the simulator's own (``simulators/plate_reading/absorbance.py``)::

    reading = (1 + g) · f_s(b + D) + z + σ(A) · N(0, 1),   f_s(x) = −log10((10^−x + s)/(1 + s))
    σ(A)² = floor² + (log10(e)/snr0)² · 10^A  (+ the reported 4 decimals' rounding, 1e-4²/12)

with ``b`` the well's plastic and optical offset and ``D`` the liquid's Beer–Lambert
absorbance: water's band ``α_w(λ) · L`` (``α_w`` from the species library at the chamber's
temperature, the path ``L`` from PLR's height–volume table less a meniscus drop) and the dye's
``u · r(λ; shift)`` (``r`` the lot's band, shifted, over its value at 426 nm).

Three stages, each a likelihood:

1. noise: the difference of each well's two reads at one wavelength has mean 0 whatever the
   well holds; (floor, snr0) by ML on all of them (Hessian interval, log scale), leaving out
   pairs whose mean is near the range (one read of them may have been lost above it);
2. means, jointly by weighted least squares (:func:`scipy.optimize.least_squares`, weights from
   stage 1): gain ``g``, stray light ``s`` (log), the dye lot's band shift, the drop of the
   liquid's centre below the height–volume table (``reader.path.offset``), the plate's path
   scale ``p`` (log), each well's blank, each dye well's amount ``u`` (nuisance), and the water
   volumes the path check relies on: per channel ``β``, ``δ`` and per well a random error, as
   Gaussian random effects with the 300 µL tip type's published (ISO 8655-2) spread. A path
   check measures only the product ``(1 + g) p``: the two are separated by their published
   priors (``g``'s unit-to-unit spread, ``p``'s per-plate spread ``reader.path.plate_sd``), as
   Gaussians of the same sd. Water wells the first pass leaves far off the model
   (:data:`DEFECT_Z`: a defect's path shortfall) are left out and the fit repeated. Intervals
   from the Gauss–Newton observed information ``(JᵀJ)⁻¹``;
3. the dye lot's ε factor: the fitted amounts over the labelled ones, by generalised least
   squares over the wells with the pipettes' published spread (correlated within a channel),
   the fit's covariance (the dye wells' path from the fitted offset and scale), and the stock's
   labelled tolerance (2 %, 1 sd) as the prior on its true concentration; dye wells whose
   ratio lies :data:`DEFECT_Z` sds off the others are left out (a defect's path).

Defect wells (``reader.absorbance.outlier_*``) are allowed for, not measured: their extra OD
sits in the well's blank, whose spread is fitted as a two-component normal, and their path
shortfall is left out as above; one plate's two or so defect wells do not measure their rate.

Not identified by these runs, left out: ``reader.absorbance.zero_offset`` and ``plate_od``
(they only ever add: the fit reports their sum, ``derived.blank_od``); the k-factor
(``reader.path.k_factor``: fixed at the library's, it sets the gain's scale); fluorescence,
luminescence and incubation keys (not read).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import optimize, special

from labtools.drivers.pylabrobot.plr import cor_96_wellplate_360uL_Fb
from labtools.errors import NotSupported
from labtools.simulators.calibration.estimates import (
    Estimate,
    entry,
    log_ci,
    normal_ci,
    observed_covariance,
    profile_ci,
)
from labtools.simulators.pipetting import TIP_CLASSES
from labtools.simulators.plate_reading.layout import PlateLayout, build_layout
from labtools.simulators.published import published
from labtools.simulators.world import SpeciesLibrary

__all__ = [
    "ReaderFit",
    "band_ratio",
    "fit_noise",
    "fit_reader",
    "plate_layout",
    "read_variance",
    "stray_reading",
    "water_alpha",
]

_LOG10_E = 0.4342944819032518
#: the reader reports OD to 4 decimals: rounding's variance
_ROUNDING_VAR = 1e-4**2 / 12.0
#: readings whose design OD exceeds this are not used (the reader's 4.0 range censors them;
#: selecting by design, never by the reading, keeps the fit unbiased) [A]
OD_USED_MAX = 3.7
#: E[u²] of u ~ U(1/3, 2/3): the published prior's SD terms (simulators/pipetting.py) [C]
_UNIFORM_THIRDS_SQ = 7.0 / 27.0
DYE_REFERENCE_NM = 426.0
#: replicate pairs used for the noise: a mean this far below the 4.0 OD range leaves no read
#: of the pair near the range (σ ≈ 0.012 OD at 3.6) [C]
PAIR_LEVEL_MAX = 3.6
#: a water well's largest |standardised residual|, or a dye well's ratio's distance from the
#: others in sds, beyond which it is taken for a defect well and left out: a defect's path
#: shortfall (0.12 |N(0, 1)|, published profile) is tens of sds at the path check's volumes [A]
DEFECT_Z = 6.0

ReaderFit = dict[str, Any]
#: the reader's profile keys no run here reads (fluorescence, luminescence, incubation)
_UNREAD = (
    "reader.fluorescence.scale",
    "reader.fluorescence.background",
    "reader.fluorescence.cv",
    "reader.fluorescence.noise_floor",
    "reader.fluorescence.focal_half_width",
    "reader.luminescence.crosstalk",
    "reader.luminescence.dark_rate",
    "reader.incubation.sensor_offset",
)
_NOT_MEASURED = {
    "reader.path.meniscus_contact_angle": "in a cylindrical well the cap lowers the centre by "
    "a constant, as the offset does: the fit reports the offset, at the profile's flat surface",
    "reader.path.plate_sd": "one plate's path scale is one draw of it (its prior in this fit)",
    "reader.absorbance.outlier_fraction": "allowed for (see fit_reader): one plate's two or so "
    "defect wells do not measure their rate",
    "reader.absorbance.outlier_od": "allowed for, not measured, as outlier_fraction",
    "reader.absorbance.outlier_path_loss": "allowed for, not measured, as outlier_fraction",
}


def plate_layout(labware: str, path_offset_mm: float = 0.0) -> PlateLayout:
    """The run's plate, its liquid's centre ``path_offset_mm`` below the height-volume table."""
    if labware != "cor_96_wellplate_360uL_Fb":
        raise NotSupported(
            f"no height-volume table for labware {labware!r}",
            hint="the runs use cor_96_wellplate_360uL_Fb plates (plate_1, plate_2)",
        )
    return build_layout(cor_96_wellplate_360uL_Fb("calibration"), "plr", None, path_offset_mm)


def water_alpha(nm: np.ndarray, celsius: float) -> np.ndarray:
    """Water's absorption coefficient (1/cm) at ``nm``: the library's band × its molarity."""
    water = SpeciesLibrary.default()["water"]
    strength = (water.concentration_molar or 0.0) * water.temperature_factor(celsius)
    return np.asarray(water.forms["default"].absorptivity(np.asarray(nm, float))) * strength


def band_ratio(species: str, nm: np.ndarray, shift: float) -> np.ndarray:
    """The lot's ε(λ) over its ε at the reference wavelength, for a band shift (nm)."""
    form = SpeciesLibrary.default()[species].forms["default"].varied(1.0, shift)
    values = form.absorptivity(np.append(nm, DYE_REFERENCE_NM))
    return np.asarray(values[:-1] / values[-1])


def stray_reading(x: np.ndarray, s: float) -> np.ndarray:
    return -np.log10((10.0 ** (-x) + s) / (1.0 + s))


def read_variance(od: np.ndarray, floor: float, snr0: float) -> np.ndarray:
    return floor**2 + (_LOG10_E / snr0) ** 2 * 10.0 ** np.clip(od, -1.0, 6.0) + _ROUNDING_VAR


def _pairs(reads: Mapping[str, Sequence[Mapping[str, float | None]]]) -> list[tuple[float, float]]:
    out = []
    for series in reads.values():
        first, second = series[0], series[1]
        for well, a in first.items():
            b = second.get(well)
            if a is not None and b is not None:
                out.append((float(a), float(b)))
    return out


def fit_noise(record: Mapping[str, Any]) -> tuple[dict[str, Estimate], tuple[float, float]]:
    """Stage 1: the noise floor and snr0 from replicate-read differences."""
    pairs = np.array(_pairs(record["empty"]["reads"]) + _pairs(record["filled"]["reads"]))
    # a pair's mean is independent of its difference, so choosing pairs by their mean keeps
    # the differences' law; pairs that may have lost a read above the range are dropped
    pairs = pairs[pairs.mean(axis=1) <= PAIR_LEVEL_MAX]
    diff = pairs[:, 0] - pairs[:, 1]
    level = pairs.mean(axis=1)

    def nll(x: np.ndarray) -> float:
        var = 2.0 * read_variance(level, math.exp(x[0]), math.exp(x[1]))
        return float(0.5 * np.sum(diff**2 / var + np.log(var)))

    start = np.array([math.log(max(float(np.std(diff[level < 0.5])) / math.sqrt(2), 1e-5)), 7.6])
    best = optimize.minimize(nll, start, method="Nelder-Mead", options={"xatol": 1e-6})
    cov = observed_covariance(nll, best.x)
    sd = np.sqrt(np.diag(cov))
    floor, f_lo, f_hi = log_ci(best.x[0], sd[0])
    snr0, s_lo, s_hi = log_ci(best.x[1], sd[1])
    how = "observed information (Hessian), log scale, from replicate-read differences"
    out = {
        "reader.absorbance.noise_floor": entry(floor, "dimensionless", f_lo, f_hi, how),
        "reader.absorbance.snr0": entry(snr0, "dimensionless", s_lo, s_hi, how),
    }
    return out, (floor, snr0)


def _mean_reads(reads: Mapping[str, Sequence[Mapping[str, float | None]]], well: str) -> list:
    return [r.get(well) for series in reads.values() for r in series]


def fit_reader(record: Mapping[str, Any]) -> ReaderFit:
    """Every identifiable reader and dye-lot parameter of a :func:`reader_run` record:
    ``{"parameters": {key: estimate}, "derived": {...}, "not_identified": {key: why}}``."""
    parameters, (floor, snr0) = fit_noise(record)
    layout = plate_layout(record["labware"])
    celsius = float(record["filled"]["temperature_c"])
    wells: dict[str, dict[str, Any]] = record["wells"]
    names = sorted(wells, key=lambda w: (int(w[1:]), w[0]))
    index = {w: i for i, w in enumerate(names)}
    dye_wells = [w for w in names if wells[w]["kind"] == "dye"]
    water_wells = [w for w in names if wells[w]["kind"] == "water"]
    dye_index = {w: i for i, w in enumerate(dye_wells)}
    water_index = {w: i for i, w in enumerate(water_wells)}
    species = record["dye"]["species"]
    tip = TIP_CLASSES[float(record["water_tip_ul"])]
    sd_beta = tip.nominal.systematic_ul / tip.nominal_ul / 3.0
    sd_delta = min(tip.nominal.systematic_ul, tip.low.systematic_ul) / 3.0
    rand_a2 = _UNIFORM_THIRDS_SQ * min(tip.nominal.random_ul, tip.low.random_ul) ** 2
    rand_c2 = _UNIFORM_THIRDS_SQ * (tip.nominal.random_ul / tip.nominal_ul) ** 2

    # observations: (kind, well, nm, value)
    rows: list[tuple[int, int, float, float]] = []  # kind 0 blank, 1 water, 2 dye
    for nm, series in record["empty"]["reads"].items():
        for read in series:
            for well, value in read.items():
                if value is not None and well in index:
                    rows.append((0, index[well], float(nm), float(value)))
    visible = sorted({float(nm) for nm in record["filled"]["reads"]} - {977.0, 900.0})
    band0 = band_ratio(species, np.array(visible), 0.0)
    for nm, series in record["filled"]["reads"].items():
        wavelength = float(nm)
        for read in series:
            for well, value in read.items():
                if value is None or well not in index:
                    continue
                kind = wells[well]["kind"]
                if kind == "empty":
                    rows.append((0, index[well], wavelength, float(value)))
                elif kind == "water":
                    rows.append((1, index[well], wavelength, float(value)))
                elif wavelength in visible:
                    rows.append((2, index[well], wavelength, float(value)))
    kinds = np.array([r[0] for r in rows])
    at = np.array([r[1] for r in rows])
    lam = np.array([r[2] for r in rows])
    obs = np.array([r[3] for r in rows])
    weight = 1.0 / np.sqrt(read_variance(obs, floor, snr0))
    alpha = water_alpha(lam, celsius)
    channel = np.array([wells[names[i]].get("channel", 0) for i in at])
    set_ul = np.array([float(wells[names[i]].get("water_ul", 0.0)) for i in at])
    water_slot = np.array([water_index.get(names[i], -1) for i in at])
    dye_slot = np.array([dye_index.get(names[i], -1) for i in at])
    lam_slot = np.array([visible.index(x) if x in visible else -1 for x in lam])
    # design ODs: the dye from its label and the library, for the censoring cut
    label_m = record["dye"]["label_uM"] * 1e-6
    lib = SpeciesLibrary.default()[species].forms["default"]
    eps_ref = float(lib.absorptivity(np.array([DYE_REFERENCE_NM]))[0])

    def design_u(well: str) -> float:
        info = wells[well]
        total = info["water_ul"] + info["dye_ul"]
        h = float(layout.height_mm(np.array([total]))[0])
        return eps_ref * label_m * info["dye_ul"] / total * h / 10.0

    u_design = np.array([design_u(w) for w in dye_wells])
    is_dye = kinds == 2
    keep = np.ones(obs.size, bool)
    keep[is_dye] = u_design[dye_slot[is_dye]] * band0[lam_slot[is_dye]] <= OD_USED_MAX
    kinds, at, lam, obs, weight, alpha = (a[keep] for a in (kinds, at, lam, obs, weight, alpha))
    channel, set_ul, water_slot, dye_slot, lam_slot = (
        a[keep] for a in (channel, set_ul, water_slot, dye_slot, lam_slot)
    )
    is_water, is_dye = kinds == 1, kinds == 2
    lam_dye = np.array(visible)
    dye_water_path = np.zeros(obs.size)  # the dye wells' water at visible wavelengths
    for k in np.flatnonzero(is_dye):
        total = wells[names[at[k]]]["water_ul"] + wells[names[at[k]]]["dye_ul"]
        dye_water_path[k] = float(layout.height_mm(np.array([total]))[0]) / 10.0
    n_wells, n_dye, n_water = len(names), len(dye_wells), len(water_wells)
    water_set = np.array([float(wells[w]["water_ul"]) for w in water_wells])
    sd_rand = np.sqrt(rand_a2 + rand_c2 * water_set**2)
    profile = published()
    gain = profile["reader.absorbance.gain_error"]
    sd_gain = gain.prior.sd if gain.prior is not None else 1e-6  # fixed: no spread
    sd_scale = max(float(profile["reader.path.plate_sd"].expected), 1e-6)  # 0: no spread
    # parameters: g, log10 s, shift, drop, ln p, beta[8], delta[8], eps[n_water], u[n_dye],
    # B[n_wells]
    o_beta, o_delta = 5, 13
    o_eps = 21
    o_u = o_eps + n_water
    o_b = o_u + n_dye
    size = o_b + n_wells

    used = np.ones(obs.size, bool)  # rows of wells not taken for defects

    def residuals(x: np.ndarray) -> np.ndarray:
        g, log_s, shift, drop, log_p = x[:5]
        s = 10.0**log_s
        beta, delta = x[o_beta:o_delta], x[o_delta:o_eps]
        eps, u, blank = x[o_eps:o_u], x[o_u:o_b], x[o_b:]
        b = blank[at]
        model = b.copy()
        if is_water.any():
            c = channel[is_water]
            volume = set_ul[is_water] * (1 + beta[c]) + delta[c] + eps[water_slot[is_water]]
            path = np.maximum(layout.height_mm(volume) - drop, 0.0) * math.exp(log_p) / 10.0
            od = alpha[is_water] * path
            bw = b[is_water]
            model[is_water] = bw + (1 + g) * (stray_reading(bw + od, s) - stray_reading(bw, s))
        if is_dye.any():
            band = band_ratio(species, lam_dye, shift)
            od = u[dye_slot[is_dye]] * band[lam_slot[is_dye]] + alpha[is_dye] * (
                dye_water_path[is_dye] - drop / 10.0
            ) * math.exp(log_p)
            bd = b[is_dye]
            model[is_dye] = bd + (1 + g) * (stray_reading(bd + od, s) - stray_reading(bd, s))
        priors = np.concatenate(
            [[g / sd_gain, log_p / sd_scale], beta / sd_beta, delta / sd_delta, eps / sd_rand]
        )
        return np.concatenate([(obs - model) * weight * used, priors])

    x0 = np.zeros(size)
    x0[1] = math.log10(2.2e-5)
    for w, i in index.items():
        empty = [v for v in _mean_reads(record["empty"]["reads"], w) if v is not None]
        x0[o_b + i] = float(np.mean(empty)) if empty else 0.04
    x0[o_u:o_b] = u_design
    scale = np.ones(size)
    scale[:5] = 0.003, 0.2, 0.5, 0.05, min(sd_scale, 0.01)
    scale[o_beta:o_delta], scale[o_delta:o_eps] = sd_beta, sd_delta
    scale[o_eps:o_u], scale[o_u:o_b], scale[o_b:] = sd_rand, 0.01 * u_design, 0.001
    lower = np.full(size, -np.inf)
    upper = np.full(size, np.inf)
    lower[1], upper[1] = -8.0, -2.0
    solution = optimize.least_squares(
        residuals, x0, x_scale=scale, bounds=(lower, upper), method="trf", xtol=1e-10
    )
    first = residuals(solution.x)[: obs.size]
    defect_wells = sorted(
        {names[at[k]] for k in np.flatnonzero(is_water & (abs(first) > DEFECT_Z))}
    )
    if defect_wells:
        used[np.isin(at, [index[w] for w in defect_wells])] = False
        solution = optimize.least_squares(
            residuals, solution.x, x_scale=scale, bounds=(lower, upper), method="trf", xtol=1e-10
        )
    jac = solution.jac
    cov = np.linalg.pinv(jac.T @ jac)
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))  # 0 for a defect well's own blank
    x = solution.x
    how = "observed information (Gauss-Newton), joint with the nuisance parameters"
    g_lo, g_hi = normal_ci(x[0], sd[0])
    parameters["reader.absorbance.gain_error"] = entry(x[0], "dimensionless", g_lo, g_hi, how)
    s_lo, s_hi = normal_ci(x[1], sd[1])
    parameters["reader.absorbance.stray_light"] = entry(
        10.0 ** x[1], "dimensionless", 10.0**s_lo, 10.0**s_hi, how + ", log10 scale"
    )
    sh_lo, sh_hi = normal_ci(x[2], sd[2])
    parameters[f"species.{species}.lot.shift"] = entry(x[2], "nanometer", sh_lo, sh_hi, how)
    parameters["reader.path.offset"] = entry(x[3], "millimeter", *normal_ci(x[3], sd[3]), how)
    blanks = x[o_b:]
    sound = ~np.isin(names, defect_wells)  # a defect water well's blank was not fitted
    parameters["reader.absorbance.well_offset_sd"] = _spread(blanks[sound], sd[o_b:][sound], x[0])
    path_design = u_design * (1.0 - x[3] / _dye_heights(record, dye_wells, layout)) * math.exp(x[4])
    factor, left_out = _epsilon_factor(record, x, cov, dye_wells, path_design, o_u, layout)
    parameters[f"species.{species}.lot.epsilon_factor"] = factor
    path_scale, scale_lo, scale_hi = log_ci(x[4], sd[4])
    return {
        "parameters": parameters,
        "derived": {
            "blank_od": entry(
                float(np.mean(blanks)),
                "dimensionless",
                *normal_ci(float(np.mean(blanks)), float(np.std(blanks) / math.sqrt(n_wells))),
                "(1 + g) plate_od + zero_offset: the mean empty well of this plate",
            ),
            "path_scale": entry(path_scale, "dimensionless", scale_lo, scale_hi, how),
            "defect_wells": sorted({*defect_wells, *left_out}),
        },
        "not_identified": {
            **_NOT_MEASURED,
            "reader.absorbance.zero_offset": "adds to every reading as the plate's OD does",
            "reader.absorbance.plate_od": "adds to every reading as the zero offset does",
            "reader.path.k_factor": "fixed at the species library's: it sets the gain's scale",
            **{key: "no calibration run reads it" for key in _UNREAD},
        },
        "cost": float(solution.cost),
        "readings": int(obs.size),
    }


def _dye_heights(
    record: Mapping[str, Any], dye_wells: Sequence[str], layout: PlateLayout
) -> np.ndarray:
    """Each dye well's liquid height (mm) by the height-volume table."""
    wells = record["wells"]
    totals = [wells[w]["water_ul"] + wells[w]["dye_ul"] for w in dye_wells]
    return np.asarray(layout.height_mm(np.array(totals, float)))


def _spread(blanks: np.ndarray, se: np.ndarray, gain: float) -> Estimate:
    """The SD of the wells' optical offsets: a normal random effect over the wells' fitted
    blanks (each with its own standard error), beside a defect component (a fraction of wells
    with an extra OD of their own spread, both nuisance), by profile likelihood over the rest."""

    def nll_at(tau: float, defect: np.ndarray) -> float:
        fraction, spread = defect
        var = (tau * (1 + gain)) ** 2 + se**2
        wide = var + spread**2
        mean = float(np.median(blanks))
        sound = -0.5 * ((blanks - mean) ** 2 / var + np.log(var))
        flawed = -0.5 * ((blanks - mean) ** 2 / wide + np.log(wide))
        mixed = special.logsumexp([sound, flawed], b=[[1 - fraction], [fraction]], axis=0)
        return float(-np.sum(mixed))

    def nll(tau: float) -> float:
        best = optimize.minimize(
            lambda d: nll_at(tau, d),
            np.array([0.02, 0.01]),
            bounds=[(0.0, 0.5), (0.003, 0.1)],
            method="L-BFGS-B",
        )
        return float(best.fun)

    best = optimize.minimize_scalar(nll, bounds=(1e-6, 0.05), method="bounded").x
    lo, hi = profile_ci(nll, float(best), 1e-7, 0.05)
    return entry(
        best,
        "dimensionless",
        lo,
        hi,
        "profile likelihood (normal random effect beside a defect component, both nuisance)",
    )


def _epsilon_factor(
    record: Mapping[str, Any],
    x: np.ndarray,
    cov: np.ndarray,
    dye_wells: list[str],
    u_design: np.ndarray,
    o_u: int,
    layout: PlateLayout,
) -> tuple[Estimate, list[str]]:
    """The lot's ε over the library's: fitted over designed amounts, by GLS (see module); and
    the dye wells left out as defects."""
    n = len(dye_wells)
    u = x[o_u : o_u + n]
    cov_u = cov[o_u : o_u + n, o_u : o_u + n] / np.outer(u, u)
    log_ratio = np.log(u / u_design)
    # the designed amounts' common path: ln(h - offset) + ln p, from the fit's (offset, ln p)
    jacobian = np.column_stack(
        [-1.0 / (_dye_heights(record, dye_wells, layout) - x[3]), np.ones(n)]
    )
    path_cov = jacobian @ cov[3:5, 3:5] @ jacobian.T
    volume_cov = np.zeros((n, n))
    wells = record["wells"]
    for i, wi in enumerate(dye_wells):
        info_i = wells[wi]
        ti = TIP_CLASSES[float(info_i["dye_tip_ul"])]
        si = _sensitivity(info_i, layout)
        for j, wj in enumerate(dye_wells):
            info_j = wells[wj]
            if (
                info_j["channel"] != info_i["channel"]
                or info_j["dye_tip_ul"] != info_i["dye_tip_ul"]
            ):
                continue
            sb = ti.nominal.systematic_ul / ti.nominal_ul / 3.0
            sdl = min(ti.nominal.systematic_ul, ti.low.systematic_ul) / 3.0
            vi, vj = info_i["dye_ul"], info_j["dye_ul"]
            sj = _sensitivity(info_j, layout)
            term = sb**2 + sdl**2 / (vi * vj)
            if i == j:
                a2 = _UNIFORM_THIRDS_SQ * min(ti.nominal.random_ul, ti.low.random_ul) ** 2
                c2 = _UNIFORM_THIRDS_SQ * (ti.nominal.random_ul / ti.nominal_ul) ** 2
                term += (a2 + c2 * vi**2) / vi**2
            volume_cov[i, j] = si * sj * term
    total = cov_u + volume_cov + path_cov
    kept = np.ones(n, bool)
    while True:
        inv = np.linalg.pinv(total[np.ix_(kept, kept)])
        ones = np.ones(int(kept.sum()))
        var = 1.0 / float(ones @ inv @ ones)
        log_fq = var * float(ones @ inv @ log_ratio[kept])
        z = np.where(kept, np.abs(log_ratio - log_fq) / np.sqrt(np.diag(total)), 0.0)
        if z.max() <= DEFECT_Z or kept.sum() <= 2:
            break
        kept[int(np.argmax(z))] = False
    tolerance = float(record["dye"]["tolerance"])
    sd = math.sqrt(var + math.log1p(tolerance) ** 2)
    value, lo, hi = log_ci(log_fq, sd)
    estimate = entry(
        value,
        "dimensionless",
        lo,
        hi,
        "GLS of fitted over labelled amounts (fit covariance, pipettes' published spread, the "
        "fitted path), with the stock's labelled tolerance",
    )
    return estimate, [w for w, k in zip(dye_wells, kept, strict=True) if not k]


def _sensitivity(info: Mapping[str, Any], layout: PlateLayout) -> float:
    """d ln(dye OD) / d ln(dye volume) for a well of ``dye_ul`` in ``water_ul``."""
    v, w = float(info["dye_ul"]), float(info["water_ul"])

    def amount(dye: float) -> float:
        total = dye + w
        return dye / total * float(layout.height_mm(np.array([total]))[0])

    step = 1e-3 * v
    return (math.log(amount(v + step)) - math.log(amount(v - step))) / (
        math.log(v + step) - math.log(v - step)
    )
