"""The liquid path at 50–300 µL: a path offset that reproduces measured water paths, and each
plate's and well's path spread; both off in ``published-1`` (the height-volume table's path);
``published-2`` (the default) has the 0.14 mm offset and no spread (a profile that knows its
plates' spread sets it: published_2.toml says why).

Measured paths [V: Csibra & Stan 2022, fpcountr ``pathlength_water_data``; three experiments
per volume, each a mean of 4 wells]: with ``reader.path.offset`` 0.14 mm [C] a PathCheck read
through the tools lies within one sd of their mean at every volume.
"""

from __future__ import annotations

import numpy as np
import pytest
from reader_rig import Rig, read, rig

from labtools.simulators.profile import Parameter, Profile
from labtools.simulators.published import published

MEASURED_PATH_CM = {
    50: (0.1403, 0.1530, 0.1705),
    75: (0.2210, 0.2322, 0.2520),
    100: (0.3020, 0.3060, 0.3187),
    125: (0.3858, 0.3872, 0.4112),
    150: (0.4599, 0.4540, 0.4700),
    175: (0.5296, 0.5306, 0.5376),
    200: (0.5957, 0.6113, 0.6180),
    225: (0.6669, 0.6781, 0.7131),
    250: (0.7293, 0.7499, 0.7842),
    275: (0.8113, 0.8226, 0.8546),
    300: (0.8826, 0.8919, 0.9186),
}
K_FACTOR_25C = 0.172  # A975 − A900 of 1 cm of water [V: Lampinen et al. 2012, fig. 6]
#: the physics before the real-data mechanisms: the table's path, no path spread, no defect wells
LEGACY = published("published-1")


def _key(name: str) -> str:
    return f"reader.absorbance.{name}" if name.startswith("outlier_") else f"reader.path.{name}"


def _profile(base: Profile | None = None, **values: float) -> Profile:
    """``base`` (the default ``published``, published-2) with ``reader.path`` values (and
    ``outlier_*``, ``reader.absorbance``'s defect wells)."""
    base = base or published()
    return base.with_values(
        {_key(k): Parameter(_key(k), base[_key(k)].unit, v) for k, v in values.items()}
    )


def _rig(seed: int, profile: Profile | None = None, plate: str = "plate_1") -> Rig:
    return rig(seed, plate_name=plate, profile=profile)


def _pathcheck(setup: Rig, volumes: list[int]) -> dict[int, float]:
    """Mean path (cm) per volume, one column of 8 wells each: (A977 − A900) / k."""
    for column, volume in enumerate(volumes, start=1):
        for row in "ABCDEFGH":
            setup.fill(f"{row}{column}", float(volume))
    lab = setup.lab()
    out = {}
    for column, volume in enumerate(volumes, start=1):
        wells = [f"{row}{column}" for row in "ABCDEFGH"]
        name = setup.plate.name
        a977, a900 = read(lab, 977, wells, name), read(lab, 900, wells, name)
        out[volume] = float(np.mean([a977[w] - a900[w] for w in wells])) / K_FACTOR_25C
    return out


def test_a_path_offset_of_0_14_mm_reads_the_measured_paths_within_their_spread() -> None:
    """published-2's offset alone (its defect wells off) against published-1's table path; then
    published-2 whole: the offset path, shortened in its defect wells."""
    assert published()["reader.path.offset"].expected == 0.14
    volumes = list(MEASURED_PATH_CM)
    shifted = _pathcheck(_rig(50, _profile(outlier_fraction=0.0)), volumes)
    table_paths = _pathcheck(_rig(50, LEGACY), volumes)
    for volume, measured in MEASURED_PATH_CM.items():
        mean, sd = float(np.mean(measured)), float(np.std(measured, ddof=1))
        assert abs(shifted[volume] - mean) < sd, volume
        # the offset takes 0.014 cm off every path (read noise cancels: the same draws)
        assert table_paths[volume] - shifted[volume] == pytest.approx(0.014, abs=0.0015)
    # published-1 keeps the table's +9 % at 50 µL
    assert table_paths[50] / np.mean(MEASURED_PATH_CM[50]) == pytest.approx(1.09, abs=0.03)

    setup = _rig(50)
    newest = _pathcheck(setup, volumes)
    spread, defects = setup.backend._path_spread(setup.plate), setup.backend._defects(setup.plate)
    assert spread is None and defects is not None
    for column, volume in enumerate(volumes):
        kept = 1.0 - float(np.mean(defects.path_loss[8 * column : 8 * column + 8]))
        expected = shifted[volume] * kept
        assert newest[volume] == pytest.approx(expected, abs=0.0015), volume
    assert defects.path_loss[: 8 * len(volumes)].any()  # seed 50: 3 defect wells among them


def test_plates_and_wells_spread_as_set_and_the_same_plate_keeps_its_paths() -> None:
    """A 3 % plate scale (Csibra & Stan's between-run spread) and a 0.08 mm well shift."""
    assert published()["reader.path.plate_sd"].expected == 0.0
    profile = _profile(plate_sd=0.03, well_sd=0.08)
    spreads = [_rig(51, profile, f"plate_{i}") for i in range(60)]
    drawn = [s.backend._path_spread(s.plate) for s in spreads]
    assert all(d is not None for d in drawn)
    scales = np.array([d.scale for d in drawn if d is not None])
    wells = np.concatenate([d.well_mm for d in drawn if d is not None])
    assert np.std(scales) == pytest.approx(0.03, rel=0.25)
    assert np.mean(scales) == pytest.approx(1.0, abs=0.012)
    assert np.std(wells) == pytest.approx(0.08, rel=0.05)
    # a plate's path check reads its own scale and its wells' shifts, read after read
    setup = spreads[0]
    spread = drawn[0]
    assert spread is not None
    first = _pathcheck(setup, [200])[200]
    # the same seed and plate without a spread (its defect wells, if any, in both alike)
    plain = _pathcheck(_rig(51, None, "plate_0"), [200])[200]
    expected = plain * spread.scale + float(np.mean(spread.well_mm[:8])) / 10.0
    assert first == pytest.approx(expected, abs=0.004)
    assert setup.backend._path_spread(setup.plate) is spread
    legacy = _rig(51, LEGACY)
    assert legacy.backend._path_spread(legacy.plate) is None  # off: nothing drawn
    scale_only = _rig(51, _profile(plate_sd=0.03), "plate_0")  # no well shifts
    drawn_scale = scale_only.backend._path_spread(scale_only.plate)
    assert drawn_scale is not None and not np.any(drawn_scale.well_mm)
    assert drawn_scale.scale == spread.scale  # the well shifts draw after the plate's scale
