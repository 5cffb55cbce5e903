"""Instrument profiles: the published profile, profile files laid over it, their refusals, the
command line and the shadow twin's profile."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labtools import Lab
from labtools.cli import main
from labtools.config import ConfigError
from labtools.simulators.plate_reading.params import CONSTANT_KEYS, TRUTH_KEYS, ReaderConstants
from labtools.simulators.profile import ProfileError
from labtools.simulators.published import load_profile, published
from labtools.simulators.world import World
from labtools.units import ureg

STAR = Path(__file__).parent.parent / "docs" / "examples" / "star_dry_run.toml"


def test_every_published_parameter_has_a_unit_and_a_source() -> None:
    profile = published()
    assert len(profile) > 50
    for key, parameter in profile.items():
        assert parameter.key == key
        ureg.Unit(parameter.unit)  # a pint unit
        assert parameter.source.strip(), key
    for key in (*CONSTANT_KEYS.values(), *TRUTH_KEYS.values()):
        assert key in profile
    assert ReaderConstants.from_profile(profile) == ReaderConstants()


def test_the_published_profile_written_as_toml_reads_back_the_same(tmp_path: Path) -> None:
    path = tmp_path / "published.toml"
    path.write_text(published().to_toml(), "utf-8")
    again = load_profile(path)
    assert dict(again.parameters) == dict(published().parameters)


def _channels(lab: Lab) -> list[dict[float, object]]:
    return lab.instruments["lh"].plr.backend.channels


def test_a_fitted_value_sets_one_channel_in_its_unit_and_moves_nothing_else(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fitted.toml"
    path.write_text(
        """
name = "our STARlet"
[liquid_handler.channel_3.tip_300.delta]
value = 450.0
unit = "nanoliter"
ci95 = [300.0, 600.0]
fitted_from = "gravimetric, 10 x 100 uL"
[reader.absorbance.gain_error]
value = 0.01
unit = "percent"
""",
        "utf-8",
    )
    profile = load_profile(path)
    parameter = profile["liquid_handler.channel_3.tip_300.delta"]
    assert (parameter.value, parameter.unit, parameter.ci95) == (0.45, "microliter", (0.3, 0.6))
    assert profile["reader.absorbance.gain_error"].value == pytest.approx(1e-4)
    # channel 2 falls back to the published prior of its tip type
    assert (
        profile["liquid_handler.channel_2.tip_300.delta"]
        is published()["liquid_handler.tip_300.delta"]
    )

    fitted, plain = Lab.virtual(7, profile=path), Lab.virtual(7)
    for channel, (mine, theirs) in enumerate(zip(_channels(fitted), _channels(plain), strict=True)):
        for tip, model in mine.items():
            if (channel, tip) == (3, 300.0):
                assert model.delta_ul == 0.45
                assert model.beta == theirs[tip].beta and model.c == theirs[tip].c
            else:
                assert model == theirs[tip]
    truth, plain_truth = (lab.shared["reader_backend"].truth for lab in (fitted, plain))
    assert truth.gain_error == pytest.approx(1e-4)
    assert truth.stray_light == plain_truth.stray_light  # the seed's other draws stay


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[reader.absorbance.gain_eror]\nvalue = 0.1\nunit = 'dimensionless'", "not a parameter"),
        ("[reader.absorbance.gain_error]\nvalue = 0.1\nunit = 'microliter'", "not a unit of"),
        ("[reader.absorbance.gain_error]\nvalue = 0.1", "needs a unit"),
        ("[reader.absorbance.gain_error]\nvalue = '0.1'\nunit = 'dimensionless'", "a number"),
        ("[reader.absorbance.gain_error]\nvalue = nan\nunit = 'dimensionless'", "finite"),
        ("[reader.absorbance.gain_error]\nvalue = 1\nunit = '1'\nsd = 2", "no prior field"),
        ("[reader.absorbance.gain_error]\nvalue = 1\nunit = '1'\ngain = 2", "unknown field"),
        (
            "[reader.absorbance.gain_error]\nvalue = 0.1\nunit = 'dimensionless'\nci95 = [2, 1]",
            "ci95",
        ),
        (
            "[reader.absorbance.gain_error]\nprior = 'uniform'\nlow = 1\nhigh = 0\n"
            "unit = 'dimensionless'",
            "above high",
        ),
        ("[reader.absorbance]\ngain_error = 3", "expected a table"),
        ("name = [1", "not TOML"),
    ],
)
def test_a_profile_file_that_cannot_be_used_is_refused_by_key(
    tmp_path: Path, text: str, words: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, "utf-8")
    with pytest.raises(ProfileError, match=words):
        load_profile(path)
    with pytest.raises(ConfigError, match=words):
        Lab.virtual(0, profile=path)


_JUNK = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    fields=st.dictionaries(
        st.sampled_from(
            ["value", "prior", "unit", "low", "high", "ci95", "mu", "sigma", "scale", "source", "x"]
        ),
        _JUNK,
        max_size=6,
    )
)
def test_any_parameter_table_is_read_or_refused_by_key(fields: dict[str, object]) -> None:
    table = {"reader": {"absorbance": {"gain_error": fields}}}
    try:
        profile = published().with_values(dict(_read(table)))
    except ProfileError as error:
        assert error.key.startswith("reader.absorbance.gain_error")
        return
    value = profile["reader.absorbance.gain_error"]
    assert value.fixed or value.prior is not None
    assert math.isfinite(value.expected)


def _read(table: dict[str, object]) -> dict[str, object]:
    from labtools.simulators.profile.profile import _parameters

    return dict(_parameters(table, ""))


def test_profile_show_and_draw_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profile", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["parameters"]["reader.absorbance.stray_light"]["prior"] == "log_uniform"
    assert main(["profile", "show", "--lab", "virtual"]) == 0
    assert 'name = "published-2"' in capsys.readouterr().out
    assert main(["profile", "show", "--profile", "published-1", "--json"]) == 0
    legacy = json.loads(capsys.readouterr().out)["parameters"]
    assert legacy["reader.absorbance.outlier_fraction"]["value"] == 0.0
    assert shown["parameters"]["reader.absorbance.outlier_fraction"]["value"] == 0.024

    out = tmp_path / "drawn.toml"
    assert main(["profile", "draw", "--seed", "12", "--out", str(out)]) == 0
    drawn = load_profile(out)
    plain = Lab.virtual(12)
    beta = drawn["liquid_handler.channel_5.tip_50.beta"]
    assert beta.fixed and beta.value == _channels(plain)[5][50.0].beta
    assert (
        drawn["reader.fluorescence.scale"].value
        == plain.shared["reader_backend"].truth.fluorescence_scale
    )
    assert not drawn["reader.absorbance.well_offset"].fixed  # a new plate draws its wells anew


def _twin_world(lab: Lab) -> World:
    assert lab.shadow is not None
    (world,) = (v for v in lab.shadow.twin.shared.values() if isinstance(v, World))
    return world


def test_a_shadow_twin_takes_the_lab_files_twin_profile(tmp_path: Path) -> None:
    fitted = tmp_path / "fitted.toml"
    fitted.write_text(
        "name = 'STARlet 2'\n[liquid_handler.channel_0.tip_300.beta]\n"
        "value = 0.02\nunit = 'dimensionless'\n",
        "utf-8",
    )
    lab_file = tmp_path / "star.toml"
    lab_file.write_text(f"twin_profile = {json.dumps(str(fitted))}\n" + STAR.read_text("utf-8"))
    with Lab.load(lab_file, shadow=True) as lab:
        profile = _twin_world(lab).profile
        assert profile.name == "STARlet 2"
        assert profile["liquid_handler.channel_0.tip_300.beta"].value == 0.02
    with Lab.load(STAR, shadow=True) as lab:
        assert _twin_world(lab).profile is published()
