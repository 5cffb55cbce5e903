"""The liquid path at 50–300 µL: a path offset that reproduces measured water paths, and each
plate's and well's path spread; both off in the published profile.

Measured paths [V: Csibra & Stan 2022, fpcountr ``pathlength_water_data``; three experiments
per volume, each a mean of 4 wells]: with ``reader.path.offset`` 0.14 mm [C] a PathCheck read
through the tools lies within one sd of their mean at every volume.
"""

from __future__ import annotations

import numpy as np
import pytest
from pylabrobot.plate_reading import PlateReader
from pylabrobot.resources import cor_96_wellplate_360uL_Fb
from reader_rig import Rig, read

from labtools.simulators.plate_reading import PhysicsPlateReaderBackend
from labtools.simulators.profile import Parameter, Profile
from labtools.simulators.published import published
from labtools.simulators.world import World

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


def _profile(**values: float) -> Profile:
    return published().with_values(
        {
            f"reader.path.{k}": Parameter(
                f"reader.path.{k}", published()[f"reader.path.{k}"].unit, v
            )
            for k, v in values.items()
        }
    )


def _rig(seed: int, profile: Profile | None = None, plate: str = "plate_1") -> Rig:
    world = World(seed, profile=profile)
    backend = PhysicsPlateReaderBackend(world)
    reader = PlateReader(name="reader", size_x=130.0, size_y=90.0, size_z=30.0, backend=backend)
    labware = cor_96_wellplate_360uL_Fb(name=plate)
    reader.assign_child_resource(labware)
    return Rig(world, backend, reader, labware)


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
    volumes = list(MEASURED_PATH_CM)
    shifted = _pathcheck(_rig(50, _profile(offset=0.14)), volumes)
    published_paths = _pathcheck(_rig(50), volumes)
    for volume, measured in MEASURED_PATH_CM.items():
        mean, sd = float(np.mean(measured)), float(np.std(measured, ddof=1))
        assert abs(shifted[volume] - mean) < sd, volume
        # the offset takes 0.014 cm off every path (read noise cancels: the same draws)
        assert published_paths[volume] - shifted[volume] == pytest.approx(0.014, abs=0.0015)
    # the published profile keeps today's +9 % at 50 µL
    assert published_paths[50] / np.mean(MEASURED_PATH_CM[50]) == pytest.approx(1.09, abs=0.03)


def test_plates_and_wells_spread_as_set_and_the_same_plate_keeps_its_paths() -> None:
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
    plain = _pathcheck(_rig(51, None, "plate_0"), [200])[200]
    expected = plain * spread.scale + float(np.mean(spread.well_mm[:8])) / 10.0
    assert first == pytest.approx(expected, abs=0.004)
    assert setup.backend._path_spread(setup.plate) is spread
    assert _rig(51).backend._path_spread(_rig(51).plate) is None  # off: nothing drawn
