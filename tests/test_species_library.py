"""The species library against the published figures it cites.

Every expected value below is stated here with its source, not read back from
``simulators/data/species.toml``: the library's spectra must put each species' band where the
literature puts it, with the literature's absorptivity; indicators turn colour at their published
pKa; fluorophores emit where (and as brightly as) their sources say; colourless compounds stay
colourless. Sources (see ``species_candidates.md``): PCAD-DB and PCAD-SPEC are the PhotochemCAD
database and its measured spectra; Belitz is Belitz, Grosch & Schieberle, *Food Chemistry*,
table 8.12 (λmax in water); EU is Commission Regulation (EU) 231/2012 (E1%1cm, recalled).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from labtools.simulators.world import Species, SpeciesLibrary

#: how far (nm) a modelled band maximum may sit from the cited λmax
LAMBDA_TOLERANCE_NM = 3.0
#: the evidence tags every source line carries (species.toml's header)
TAGS = ("[V]", "[V2]", "[L]", "[C]", "[A]")
#: kinds that are not analytes
NOT_ANALYTES = {"buffer", "solvent"}


def e1pct(specific_absorbance: float, molar_mass: float) -> float:
    """ε (M⁻¹ cm⁻¹) from E1%1cm and the molar mass: E1% × M / 10."""
    return specific_absorbance * molar_mass / 10.0


def library() -> SpeciesLibrary:
    return SpeciesLibrary.default()


def at(species: Species, form: str, nm: float) -> float:
    return float(species.forms[form].absorptivity(np.array([nm]))[0])


@dataclass(frozen=True)
class Band:
    """A published absorption maximum: ``epsilon`` (M⁻¹ cm⁻¹) at ``nm``, relative tolerance."""

    key: str
    form: str
    nm: float
    epsilon: float
    source: str
    rel: float = 0.02


# fmt: off
BANDS = [
    # food dyes
    Band("erythrosine", "default", 527, e1pct(1100, 879.86),
         "Belitz 527 nm (water); EU E1% 1100, disodium salt 879.86"),
    Band("ponceau_4r", "default", 505, e1pct(430, 604.47), "Belitz 505 nm; EU E1% 430"),
    Band("carmoisine", "default", 516, e1pct(510, 502.44), "Belitz 516 nm; EU E1% 510"),
    Band("indigo_carmine", "default", 610, e1pct(480, 466.36), "Belitz 610 nm; EU E1% 480"),
    Band("patent_blue_v", "default", 638, e1pct(2000, 1159.42 / 2),
         "Belitz 638 nm; EU E1% 2000 of the calcium salt (per dye anion)"),
    Band("quinoline_yellow", "default", 414, 22700, "PCAD-DB: 22,700 at 414 nm (Shahabadi 2013)"),
    # indicators
    Band("phenol_red", "acid", 430, 24000, "PCAD-DB: Shapovalov 2011, 24,000 at 430 nm"),
    Band("phenol_red", "base", 558, 62000, "PCAD-DB: Shapovalov 2011, 62,000 at 558 nm"),
    Band("cresol_red", "acid", 433, 24000, "PCAD-DB: Shapovalov 2011, 24,000 at 433 nm"),
    Band("cresol_red", "base", 572, 69000, "PCAD-DB: Shapovalov 2011, 69,000 at 572 nm"),
    Band("phenolphthalein", "base", 553, 30400,
         "PCAD-DB: 30,400 at 552 nm (Kunimoto 2002); 553 nm (Jayasree 2001)"),
    Band("pyranine", "acid", 403, 19900, "PCAD-DB: Politi 1986, 19,900 at 403 nm in 3 M HCl"),
    Band("pyranine", "base", 456, 21600, "PCAD-DB: Politi 1986, 21,600 at 456 nm, 0.01 M NaOH"),
    Band("o_nitrophenol", "base", 420, 4500, "BioNumbers 105140 (Miller 1972): 0.0045 OD/µM"),
    Band("o_nitrophenol", "acid", 351, 3200, "neutral phenol's band, ~3.2e3 at 351 nm [L]"),
    # cofactors
    Band("nadph", "default", 340, 6220, "Horecker & Kornberg 1948: 6.22 mM⁻¹ cm⁻¹"),
    Band("nad", "default", 260, 18000, "ε260 of NAD⁺ = 18.0 mM⁻¹ cm⁻¹"),
    Band("fmn", "default", 445, 12200, "Belitz 445 nm (riboflavin, water); 12,200 [L]"),
    # chromogenic products
    Band("p_nitroaniline", "default", 381, 13500, "~13,500 at 381 nm [L]"),
    Band("tnb", "default", 412, 14150, "Ellman's reagent: 14,150 at 412 nm, dilute buffer"),
    # fluorophores and stains (aqueous values)
    Band("rhodamine_b", "default", 554, 72900, "PCAD-DB: Bhowmik 1987, 72,900 at 554 nm, water"),
    Band("rhodamine_6g", "default", 526, 116000,
         "PCAD-DB: 116,000 (Yuan 2012, ethanol); 526 nm in water"),
    Band("eosin_y", "default", 516, 91500, "PCAD-DB: Zwicker 1963, 91,500 at 516 nm, pH 9"),
    Band("sulforhodamine_b", "default", 565, 99000, "PCAD-DB: Lee 2009, 99,000 at 565 nm, PBS"),
    Band("methylene_blue", "default", 663, 96000,
         "PCAD-DB: 663 nm in water (Jozwiakowski 1988); 96,000 (Bacellar 2014)"),
    Band("crystal_violet", "default", 590, 75800, "PCAD-DB: Müller 1975, 75,800 at 590 nm"),
    Band("malachite_green", "default", 616, 77200, "PCAD-DB: Müller 1975, 77,200 at 616 nm"),
    Band("quinine_sulfate", "default", 347.5, 5700, "PCAD-DB: Irvin 1948, 5,700, dilute H2SO4"),
]
# fmt: on

#: every species added with the families' library (the original thirteen are covered elsewhere)
NEW = sorted({band.key for band in BANDS})

FOOD_DYES = [
    "erythrosine",
    "ponceau_4r",
    "carmoisine",
    "indigo_carmine",
    "patent_blue_v",
    "quinoline_yellow",
]


@pytest.mark.parametrize("band", BANDS, ids=lambda b: f"{b.key}-{b.form}")
def test_band_maximum_where_published(band: Band) -> None:
    form = library()[band.key].forms[band.form]
    nm = np.arange(band.nm - 40.0, band.nm + 40.0, 0.05)
    peak = float(nm[np.argmax(form.absorptivity(nm))])
    assert peak == pytest.approx(band.nm, abs=LAMBDA_TOLERANCE_NM), band.source


@pytest.mark.parametrize("band", BANDS, ids=lambda b: f"{b.key}-{b.form}")
def test_absorptivity_at_the_maximum_as_published(band: Band) -> None:
    assert at(library()[band.key], band.form, band.nm) == pytest.approx(
        band.epsilon, rel=band.rel
    ), band.source


# (key, form, nm, published ε, source): figures away from the band maximum
ELSEWHERE = [
    ("p_nitroaniline", "default", 405, 9600, "Diapharma: 'extinction coefficient of pNA is 9600'"),
    ("malachite_green", "default", 420, 16267, "PCAD-SPEC L02 (water): second band near 420 nm"),
    ("pyranine", "base", 455, 21600, "PCAD-SPEC C16, scaled to Politi's 21,600"),
]


@pytest.mark.parametrize(("key", "form", "nm", "epsilon", "source"), ELSEWHERE)
def test_absorptivity_off_the_maximum_as_published(
    key: str, form: str, nm: float, epsilon: float, source: str
) -> None:
    assert at(library()[key], form, nm) == pytest.approx(epsilon, rel=0.03), source


# (key, form, nm, lowest, highest, source): the library's value lies within the spread of the
# published values (sources disagree; the library takes one of them)
SPREAD = [
    ("phenol_red", "base", 558, 40000, 62000, "PCAD-DB: Bhuchar 1984, Shapovalov 2011"),
    ("cresol_red", "base", 572, 46300, 69000, "PCAD-DB: Bhuchar 1984, Skalican 1994, Shapovalov"),
    ("phenolphthalein", "base", 553, 21500, 33400, "PCAD-DB: Bhuchar, Kunimoto, Jayasree"),
    ("methylene_blue", "default", 663, 40700, 126000, "PCAD-DB: Pärkänyi, Bacellar, Jozwiakowski"),
    ("crystal_violet", "default", 590, 73200, 112000, "PCAD-DB: Bhowmik, Müller, Zollinger"),
    ("malachite_green", "default", 616, 34300, 148900, "PCAD-DB: Nickel, Jozwiakowski, Green"),
    ("eosin_y", "default", 516, 86500, 91500, "PCAD-DB: Chen 2005, Zwicker 1963 (water)"),
    ("erythrosine", "default", 527, 96200, 107000, "PCAD-DB ethanol values; EU E1% 1100 (water)"),
]


@pytest.mark.parametrize(("key", "form", "nm", "low", "high", "source"), SPREAD)
def test_absorptivity_within_the_published_spread(
    key: str, form: str, nm: float, low: float, high: float, source: str
) -> None:
    assert low * 0.99 <= at(library()[key], form, nm) <= high * 1.01, source


# -- indicators ------------------------------------------------------------------------------
# (key, pKa, tolerance, source)
PKA = [
    ("phenol_red", 7.67, 0.05, "pK' 7.67 at 25 °C in 0.15 M NaCl, spectrophotometric"),
    ("cresol_red", 7.8, 0.15, "pK2 ≈ 7.8 at 298.15 K (purified cresol red, seawater)"),
    ("phenolphthalein", 9.5, 0.2, "colour change pKa 9.3-9.7"),
    ("pyranine", 7.3, 0.2, "pKa ~7.3"),
    ("o_nitrophenol", 7.2, 0.1, "pKa 7.2-7.23"),
]


@pytest.mark.parametrize(("key", "pka", "tolerance", "source"), PKA)
def test_indicator_pka_as_published(key: str, pka: float, tolerance: float, source: str) -> None:
    species = library()[key]
    assert species.pka == pytest.approx(pka, abs=tolerance), source
    assert species.base_fraction(species.pka) == pytest.approx(0.5)
    assert species.base_fraction(pka - 1.0) < 0.2 < 0.8 < species.base_fraction(pka + 1.0)


# (key, nm, acidic pH, basic pH, the form that absorbs more there): the colour change
COLOUR = [
    ("phenol_red", 558, 6.0, 9.0, "base"),  # yellow to red-violet
    ("phenol_red", 430, 6.0, 9.0, "acid"),
    ("cresol_red", 572, 6.5, 9.5, "base"),
    ("cresol_red", 433, 6.5, 9.5, "acid"),
    ("phenolphthalein", 553, 8.0, 11.0, "base"),  # colourless to pink
    ("pyranine", 455, 6.0, 9.0, "base"),
    ("pyranine", 403, 6.0, 9.0, "acid"),
    ("o_nitrophenol", 420, 5.0, 11.0, "base"),  # the Na2CO3 stop turns it yellow
]


@pytest.mark.parametrize(("key", "nm", "acidic", "basic", "stronger"), COLOUR)
def test_indicator_changes_colour_across_its_pka(
    key: str, nm: float, acidic: float, basic: float, stronger: str
) -> None:
    species = library()[key]
    low, high = (float(species.absorptivity(nm, ph=ph)) for ph in (acidic, basic))
    if stronger == "base":
        assert high > 3.0 * low
    else:
        assert low > 3.0 * high


def test_phenol_red_crosses_at_its_isosbestic_point() -> None:
    # colorSpec vignette 'Phenol Red' (Rovati et al. fig. 7): '365 and 477 are isosbestic points'
    phenol_red = library()["phenol_red"]
    acid, base = at(phenol_red, "acid", 477), at(phenol_red, "base", 477)
    assert acid == pytest.approx(base, rel=0.05)
    spread = [float(phenol_red.absorptivity(477, ph=ph)) for ph in (5.0, 7.67, 10.0)]
    assert np.ptp(spread) < 0.05 * max(spread)


# -- fluorescence ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Emission:
    """A published emission: maximum ``emission_nm`` for absorption at ``absorption_nm`` (in the
    source's solvent: the Stokes shift carries over to water), quantum yield ``quantum_yield``."""

    key: str
    absorption_nm: float
    emission_nm: float
    quantum_yield: float
    source: str
    #: the source measured in water: its emission maximum holds as it is
    aqueous: bool = False


# fmt: off
EMISSIONS = [
    Emission("erythrosine", 535, 558, 0.08, "PCAD N07, ethanol; Φ Fleming 1977"),
    Emission("rhodamine_b", 542.75, 565, 0.70, "PCAD N11, ethanol; Φ Lopez-Arbeloa 1989"),
    Emission("rhodamine_6g", 529.75, 552, 0.95, "PCAD N13, ethanol; Φ Kubin 1982"),
    Emission("eosin_y", 524.75, 543, 0.67, "PCAD N05, ethanol; Φ Seybold 1969"),
    Emission("sulforhodamine_b", 553, 571, 0.70, "PCAD N12, ethanol"),
    Emission("methylene_blue", 656, 677, 0.04, "PCAD I12, ethanol; Φ Olmsted 1979"),
    Emission("quinine_sulfate", 347.5, 451, 0.546, "PCAD E26, H2SO4; Φ Eaton 1988", True),
    Emission("pyranine", 455, 512, 1.0, "PCAD C16, water pH 10; Φ Tran-Thi 2002", True),
    Emission("fmn", 445, 530, 0.23,
             "FMN 'Fluoreszenzmaximum bei 530 nm'; Φ riboflavin in water", True),
    Emission("nadph", 340, 460, 0.02, "as NADH: emission ~460 nm, Φ ~0.02", True),
]
# fmt: on


@pytest.mark.parametrize("emission", EMISSIONS, ids=lambda e: e.key)
def test_fluorescence_as_published(emission: Emission) -> None:
    species = library()[emission.key]
    fluorescence = species.fluorescence
    assert fluorescence is not None
    assert fluorescence.quantum_yield == pytest.approx(emission.quantum_yield), emission.source
    # excited at the absorption maximum, emitting to the red of it
    assert fluorescence.excitation_nm == pytest.approx(species.lambda_max_nm, abs=1.0)
    assert fluorescence.emission_nm > fluorescence.excitation_nm
    assert fluorescence.emission(fluorescence.emission_nm) == pytest.approx(1.0)
    if emission.aqueous:
        assert fluorescence.emission_nm == pytest.approx(emission.emission_nm, abs=2.0)
    stokes = 1e7 / emission.absorption_nm - 1e7 / emission.emission_nm
    modelled = 1e7 / species.lambda_max_nm - 1e7 / fluorescence.emission_nm
    assert modelled == pytest.approx(stokes, abs=60.0), emission.source


# -- colourless where the compound is ----------------------------------------------------------
def test_nad_plus_does_not_absorb_at_340_nm() -> None:
    # 'NADH and NADPH exhibit strong absorbance at 340 nm, whereas ... NAD+ and NADP+ do not'
    # (protocols.io dx.doi.org/10.17504/protocols.io.bp2l6jjq5vqe/v1)
    lib = library()
    assert float(lib["nad"].absorptivity(340)) < 1.0
    assert float(lib["nadph"].absorptivity(340)) == pytest.approx(6220, rel=0.01)


def test_o_nitrophenol_is_pale_until_stopped() -> None:
    # the Miller assay reads ONP at 420 nm only after a Na2CO3 stop to pH 11 (BioNumbers 105140)
    onp = library()["o_nitrophenol"]
    assert at(onp, "acid", 420) < 0.05 * at(onp, "base", 420)


def test_phenolphthalein_is_colourless_in_acid() -> None:
    # colourless below pH ~8.3, pink above ~9 (teaching pages; the lactone absorbs below 300 nm)
    php = library()["phenolphthalein"]
    visible = np.arange(380.0, 750.0, 1.0)
    assert float(np.max(php.forms["acid"].absorptivity(visible))) == 0.0
    assert float(np.max(php.absorptivity(visible, ph=7.0))) < 0.01 * 30400
    assert float(np.max(php.absorptivity(visible, ph=11.0))) > 0.9 * 30400


def test_quinine_sulfate_is_colourless() -> None:
    # PCAD-SPEC E26 (0.5 M H2SO4): 122 M⁻¹ cm⁻¹ at 400 nm, 15 at 420 nm
    quinine = library()["quinine_sulfate"]
    assert float(quinine.absorptivity(420)) < 20.0
    assert float(quinine.absorptivity(400)) < 200.0


@pytest.mark.parametrize(
    ("key", "nm"),
    [
        ("quinoline_yellow", 600),  # yellow: nothing in the red
        ("patent_blue_v", 450),  # blue: nothing in the blue
        ("indigo_carmine", 420),
        ("methylene_blue", 450),
        ("sulforhodamine_b", 420),
    ],
)
def test_no_colour_far_from_the_band(key: str, nm: float) -> None:
    species = library()[key]
    assert float(species.absorptivity(nm)) < 0.005 * species.epsilon_max


# -- the library as a whole ------------------------------------------------------------------
@pytest.mark.parametrize("key", NEW)
def test_spectrum_is_physical_across_the_reader_range(key: str) -> None:
    species = library()[key]
    nm = np.arange(230.0, 1000.5, 0.5)
    peak = max(form.epsilon for form in species.forms.values())
    assert 1e3 <= peak <= 1.5e5  # an organic chromophore's range
    for form in species.forms.values():
        epsilon = form.absorptivity(nm)
        assert np.all(np.isfinite(epsilon)) and np.all(epsilon >= 0.0)
        assert float(np.max(epsilon)) <= 1.5e5
        # nothing under the water band the reader's path check reads (900-1000 nm)
        assert float(np.max(epsilon[nm >= 850.0])) < 0.001 * peak


@pytest.mark.parametrize("key", FOOD_DYES)
def test_food_dyes_come_in_lots(key: str) -> None:
    species = library()[key]
    assert species.kind == "dye" and species.batch is not None
    assert 0.0 < species.batch.epsilon_sd <= 0.1 and 0.0 < species.batch.shift_nm_sd <= 3.0
    assert "batch" in species.sources


def _numbers(species: Species) -> set[str]:
    """The ``sources`` keys a species' numbers need."""
    needed = {"molar_mass"}
    if species.forms:
        needed.add("bands")
    if species.pka is not None:
        needed.add("pka")
    if species.fluorescence is not None:
        needed.add("fluorescence")
    if species.luminescence is not None:
        needed.add("luminescence")
    if species.batch is not None:
        needed.add("batch")
    return needed


def test_library_holds_thirty_sourced_analytes() -> None:
    lib = library()
    analytes = [lib[key] for key in lib if lib[key].kind not in NOT_ANALYTES]
    assert len(analytes) >= 30
    assert sum(1 for s in analytes if s.forms) >= 32  # real, absorbing species
    for species in analytes:
        missing = _numbers(species) - set(species.sources)
        assert not missing, f"{species.key}: no source for {sorted(missing)}"
        if species.forms:
            assert {"epsilon", "e1pct"} & set(species.sources), species.key
        for name, text in species.sources.items():
            assert any(tag in text for tag in TAGS), f"{species.key}.{name}: no evidence tag"


@pytest.mark.parametrize("key", NEW)
def test_new_species_cite_their_band_position(key: str) -> None:
    assert "lambda_max" in library()[key].sources
