"""Defect wells and UV stray light, each off in ``published-1`` and switched on in
``published-2`` (the default ``published``), drawn from streams of their own where a profile
switches them on (so nothing else a seed draws moves).

Defect wells (``reader.absorbance.outlier_*``): a fraction of a plate's wells carry an extra
OD ``N(0, outlier_od²)`` and a path ``1 − loss·|N(0, 1)|``, the same across the plate's reads.
Stray light (``reader.absorbance.stray_light_uv_*``): ``s(λ) = s·(1 + (r − 1)·exp(−(λ − 230)/L))``
above 230 nm, ``s·r`` below.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from reader_rig import Rig, read, rig

from labtools.simulators.plate_reading.absorbance import measured_absorbance, stray_light
from labtools.simulators.plate_reading.params import (
    PlateTruth,
    ReaderConstants,
    ReaderTruth,
    draw_reader,
)
from labtools.simulators.profile import Parameter, Prior, Profile
from labtools.simulators.published import published

#: the plate's wells in PLR's item order (column by column), the order of its hidden arrays
ALL = [f"{r}{c}" for c in range(1, 13) for r in "ABCDEFGH"]
#: the physics before the real-data mechanisms: every mechanism here off
LEGACY = published("published-1")


def _profile(base: Profile | None = None, **values: float | Prior) -> Profile:
    """``base`` (the default ``published``, published-2) with ``reader.absorbance`` values."""
    base = base or published()
    out = {}
    for name, value in values.items():
        key = f"reader.absorbance.{name}"
        unit = base[key].unit
        if isinstance(value, Prior):
            out[key] = Parameter(key, unit, prior=value, source="test")
        else:
            out[key] = Parameter(key, unit, float(value), source="test")
    return base.with_values(out)


def _rig(seed: int, profile: Profile | None = None) -> Rig:
    setup = rig(seed, profile=profile)
    for well in ALL:
        setup.fill(well, 200.0, tartrazine=30e-6)  # ~0.5 OD at 426 nm
    return setup


def _reads(setup: Rig, times: int = 1) -> list[np.ndarray]:
    lab = setup.lab()
    return [np.array([read(lab, 426, ALL)[w] for w in ALL]) for _ in range(times)]


def test_off_in_published_1_draws_nothing_and_inert_scales_change_nothing() -> None:
    plain = _reads(_rig(40, LEGACY), 2)
    inert_scales = _profile(
        LEGACY, outlier_od=0.05, outlier_path_loss=0.2, stray_light_uv_length=5.0
    )
    setup = _rig(40, inert_scales)
    inert = _reads(setup, 2)
    assert all(np.array_equal(a, b) for a, b in zip(plain, inert, strict=True))
    assert not [k for k in setup.world.hidden_truth() if k.endswith(("/defects", "/path"))]
    assert setup.backend.truth.stray_light_uv_ratio == 1.0
    k = ReaderConstants.from_profile(LEGACY)
    assert (k.outlier_fraction, k.path_offset_mm, k.path_plate_sd, k.path_well_sd_mm) == (0,) * 4


def test_on_in_published_2_at_its_figures_and_drawn_for_each_plate() -> None:
    """published-2 (the default, and ``ReaderConstants()``'s): 2.4 % defect wells of 0.01 OD
    sd and 0.12 path loss, the 0.14 mm path offset; no plate or well path spread (the
    measured 3 % between runs is not told apart from the reader's gain: published_2.toml)."""
    for k in (ReaderConstants(), ReaderConstants.from_profile(published())):
        assert (k.outlier_fraction, k.outlier_od, k.outlier_path_loss) == (0.024, 0.01, 0.12)
        assert (k.path_offset_mm, k.path_plate_sd, k.path_well_sd_mm) == (0.14, 0.0, 0.0)
    setup = _rig(40)
    on = _reads(setup)[0]
    drawn = [k for k in setup.world.hidden_truth() if k.endswith(("/defects", "/path"))]
    assert drawn == ["reader/plate/plate_1/96/defects"]
    assert 6.0 <= setup.backend.truth.stray_light_uv_ratio <= 30.0
    # the same seed's plate on published-1: every reading moves (the path, at least)
    assert not np.any(on == _reads(_rig(40, LEGACY))[0])


def test_defect_wells_add_an_od_that_stays_with_them_across_reads() -> None:
    """A quarter of the wells, 0.05 OD sd: against the same seed without defects (the same
    plate, reader and noise draws), sound wells read the same and defect wells differ by
    their defect, in both reads alike."""
    clean = _reads(_rig(41, _profile(outlier_fraction=0.0)), 2)
    setup = _rig(41, _profile(outlier_fraction=0.25, outlier_od=0.05, outlier_path_loss=0.0))
    dirty = _reads(setup, 2)
    defects = setup.backend._defects(setup.plate)
    assert defects is not None
    hit = defects.od != 0.0
    assert 12 <= hit.sum() <= 36  # binomial(96, 0.25): 24 ± 4.2
    for before, after in zip(clean, dirty, strict=True):
        assert np.abs(after - before)[~hit].max() <= 1.5e-4  # rounding to 0.1 mOD
        assert after[hit] - before[hit] == pytest.approx(defects.od[hit], abs=2e-3)
    assert np.std(defects.od[hit]) == pytest.approx(0.05, rel=0.35)
    # between reads only the noise differs, as on a plate without defects
    assert np.abs((dirty[0] - dirty[1]) - (clean[0] - clean[1])).max() < 2e-3


def test_defect_wells_read_a_shorter_path_on_the_low_side_only() -> None:
    """Path loss 0.12 (a mean shortfall of 0.8 × 0.12 ≈ 9.5 %, the fpcountr Spark plate's low
    wells): every defect well reads low by its shortfall times its liquid's OD."""
    clean = _reads(_rig(42, _profile(outlier_fraction=0.0)))[0]
    setup = _rig(42, _profile(outlier_fraction=0.5, outlier_od=0.0, outlier_path_loss=0.12))
    dirty = _reads(setup)[0]
    defects = setup.backend._defects(setup.plate)
    assert defects is not None
    hit = defects.path_loss > 0.0
    assert 30 <= hit.sum() <= 66 and not np.any(defects.od)
    assert np.all(dirty[hit] <= clean[hit]) and np.array_equal(dirty[~hit], clean[~hit])
    assert np.mean(defects.path_loss[hit]) == pytest.approx(0.12 * math.sqrt(2 / math.pi), rel=0.3)
    # the liquid's OD (the clean reading less the plastic's ~0.04) shortened by the loss
    liquid = clean[hit] - 0.04
    assert clean[hit] - dirty[hit] == pytest.approx(defects.path_loss[hit] * liquid, abs=4e-3)


def test_stray_light_rises_towards_the_uv_and_holds_flat_below_230_nm() -> None:
    truth = ReaderTruth(1e-5, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, stray_light_uv_ratio=30.0)
    k = ReaderConstants()
    nm = np.array([200.0, 230.0, 250.0, 270.0, 600.0])
    s = stray_light(truth, k, nm)[0]
    expected = 1e-5 * (1 + 29 * np.exp(-np.maximum(nm - 230, 0) / 20.0))
    assert s == pytest.approx(expected, rel=1e-12)
    assert s[:2] == pytest.approx([3e-4, 3e-4])  # the Synergy HTX's 0.03 % at 230 nm
    flat = ReaderTruth(1e-5, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    assert stray_light(flat, k, nm) == 1e-5  # one number: today's
    # a black well (10 OD) reads at the ceiling −log10 s: 3.5 OD at 230 nm, 5 OD in the visible
    quiet = ReaderConstants(snr0=1e12, od_noise_floor=0.0)
    plate = PlateTruth(plate_od=0.0, well_offsets_od=np.zeros(1))
    rng = np.random.default_rng(0)
    reading = measured_absorbance(np.full((1, 5), 10.0), plate, np.arange(1), truth, quiet, rng, nm)
    assert reading[0] == pytest.approx(-np.log10((1e-10 + s) / (1 + s)), rel=1e-9)
    assert reading[0, 1] == pytest.approx(3.52, abs=0.01) and reading[0, 4] > 4.9


def test_a_uv_ratio_prior_draws_from_its_own_stream_and_moves_no_other_draw() -> None:
    """published-2's log-uniform 6-30 ratio against published-1's fixed 1 (no draw made)."""
    assert published()["reader.absorbance.stray_light_uv_ratio"].prior == Prior(
        "log_uniform", 6.0, 30.0
    )
    drawn = _rig(43).backend.truth
    plain = _rig(43, LEGACY).backend.truth
    assert 6.0 <= drawn.stray_light_uv_ratio <= 30.0
    assert plain.stray_light_uv_ratio == 1.0
    assert drawn == replace(plain, stray_light_uv_ratio=drawn.stray_light_uv_ratio)
    # without a stream of its own the ratio is drawn last, after every other field
    legacy = draw_reader(np.random.default_rng(5), LEGACY)
    assert legacy.stray_light_uv_ratio == 1.0  # fixed: no draw made
    newest = draw_reader(np.random.default_rng(5), published())
    assert 6.0 <= newest.stray_light_uv_ratio <= 30.0
    assert newest == replace(legacy, stray_light_uv_ratio=newest.stray_light_uv_ratio)
