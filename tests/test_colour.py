"""Well colours: absorbance spectra through CIE D65 and the 1931 2° observer to sRGB, held to
published values (the CIE's chromaticities, the tables' own figures) and known dyes' hues."""

from __future__ import annotations

import colorsys

import numpy as np
import pytest

from labtools.simulators.world import colour
from labtools.simulators.world.mixture import Mixture
from labtools.simulators.world.species import SpeciesLibrary

CLEAR = np.zeros(colour.WAVELENGTHS_NM.size)


def test_the_tables_are_the_cie_tables():
    cmf = colour._table("cie_1931_2deg_cmf.csv", 3)
    d65 = colour._table("cie_d65.csv", 1)[:, 0]
    at = {int(nm): i for i, nm in enumerate(colour.WAVELENGTHS_NM)}
    # CIE 015:2018 table values: ybar peaks at 1 at 555 nm; xbar(600) = 1.0622; D65 is 100 at
    # 560 nm by definition
    assert cmf[at[555], 1] == 1.0
    assert cmf[at[600]].tolist() == [1.0622, 0.631, 0.0008]
    assert d65[at[560]] == 100.0
    # the three functions have equal areas (equal-energy white at x = y = 1/3), 106.857 at 5 nm
    assert cmf.sum(axis=0) * 5 == pytest.approx([106.857] * 3, abs=2e-3)


def test_a_clear_sample_has_d65s_chromaticity_and_is_white():
    x, y, z = colour.tristimulus(CLEAR)
    assert y == pytest.approx(1.0)
    # CIE 015:2018: D65, 2° observer, x = 0.31272, y = 0.32903
    assert x / (x + y + z) == pytest.approx(0.31272, abs=5e-5)
    assert y / (x + y + z) == pytest.approx(0.32903, abs=5e-5)
    assert colour.hex_colour(colour.srgb(CLEAR)) == "#ffffff"


def test_an_opaque_sample_is_black_and_a_grey_filter_grey():
    assert colour.hex_colour(colour.srgb(CLEAR + 10.0)) == "#000000"
    # a neutral density of 0.5 transmits 31.6 %: sRGB encodes it as 1.055·0.3162^(1/2.4) − 0.055
    # = 0.598 (IEC 61966-2-1)
    grey = colour.srgb(CLEAR + 0.5)
    assert grey == pytest.approx([0.598] * 3, abs=1e-3)


def _hue(species: str, micromolar: float, path_cm: float = 0.6) -> tuple[float, np.ndarray]:
    mixture = Mixture.solution(200.0, {species: micromolar * 1e-6})
    absorbance = mixture.absorbance(colour.WAVELENGTHS_NM, path_cm, SpeciesLibrary.default())
    rgb = colour.srgb(absorbance)
    return colorsys.rgb_to_hls(*rgb)[0] * 360.0, rgb


@pytest.mark.parametrize(
    ("species", "low", "high"),
    [
        ("tartrazine", 45.0, 65.0),  # lemon yellow: it absorbs the blue (λmax 426 nm)
        ("sunset_yellow", 20.0, 45.0),  # orange (λmax 482 nm)
        ("brilliant_blue", 180.0, 230.0),  # blue-turquoise: it absorbs the red (λmax 630 nm)
    ],
)
def test_a_dyes_colour_is_the_complement_of_what_it_absorbs(species, low, high):
    hue, _ = _hue(species, 20.0)
    assert low <= hue <= high


def test_more_dye_or_a_longer_path_darkens_the_well():
    (_, thin), (_, deep) = _hue("brilliant_blue", 10.0, 0.3), _hue("brilliant_blue", 10.0, 0.9)
    (_, dilute), (_, strong) = _hue("brilliant_blue", 5.0), _hue("brilliant_blue", 40.0)
    assert deep[0] < thin[0] and strong[0] < dilute[0]  # less red gets through


def test_a_spectrum_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="81 values"):
        colour.tristimulus(np.zeros(80))
