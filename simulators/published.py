"""The published-values profiles (the built-in default) and reading profile files.

The built-in profiles are versioned, oldest first (:data:`VERSIONS`); ``"published"`` names the
newest, so a journal recorded under an older one replays bit for bit on that version by name:

- ``published-1``: the physics before the real readings' departures were modelled (no defect
  wells, flat stray light, the height-volume table's path, no ceiling on a dye lot's ε);
- ``published-2``: ``published-1`` with those departures switched on at their published figures
  (``published_2.toml``, each value with its source).

``published_profile.toml`` holds the reader's and spectrometer's own entries; the rest comes from
the data files that keep their sources: ``plate_reader.toml`` (range, stray light, focal and
incubation figures), ``pipetting.toml`` (each tip type's priors, derived from its ISO 8655-2
rows by :func:`labtools.simulators.pipetting.tip_parameters`) and ``species.toml`` (dye lots).
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from labtools.simulators.pipetting import TIP_CLASSES, film_parameter, tip_parameters
from labtools.simulators.profile import Parameter, Prior, Profile, ProfileError

__all__ = [
    "DETECTOR_FIELDS",
    "PUBLISHED",
    "VERSIONS",
    "data_file",
    "detector_key",
    "load_profile",
    "published",
]

#: the name of the newest built-in profile
PUBLISHED = "published"
#: the built-in profiles by version, oldest first; each a file over the one before it
VERSIONS = ("published-1", "published-2")
_OVERLAYS = {"published-2": "published_2.toml"}


@functools.cache
def data_file(name: str) -> dict[str, Any]:
    """A parsed file of ``simulators/data`` (shared; do not change it)."""
    text = resources.files("labtools.simulators").joinpath(f"data/{name}")
    return tomllib.loads(text.read_text("utf-8"))


def published(version: str = PUBLISHED) -> Profile:
    """A built-in profile: published figures and their unit-to-unit spread (the newest, or
    one of :data:`VERSIONS` by name); one object per version."""
    if version == PUBLISHED:
        version = VERSIONS[-1]
    if version not in VERSIONS:
        raise ProfileError("", f"no built-in profile {version!r}: one of {', '.join(VERSIONS)}")
    return _version(version)


@functools.cache
def _version(version: str) -> Profile:
    overlay = _OVERLAYS.get(version)
    if overlay is not None:
        text = resources.files("labtools.simulators").joinpath(f"data/{overlay}")
        before = published(VERSIONS[VERSIONS.index(version) - 1])
        return Profile.from_toml(text.read_text("utf-8"), base=before, origin=text.name)
    text = resources.files("labtools.simulators").joinpath("data/published_profile.toml")
    own = Profile.from_toml(text.read_text("utf-8"), base=None, origin=text.name)
    parameters = dict(own.parameters)
    for parameter in (*_reader_data(), *_pipetting(), *_detectors(), *_dye_lots()):
        parameters[parameter.key] = parameter
    return Profile(own.name, parameters, own.description)


def _builtin(name: str) -> bool:
    return name == PUBLISHED or name in VERSIONS


def load_profile(source: str | Path | Profile | None) -> Profile:
    """A profile by name (``"published"``, the default for ``None``, or a version such as
    ``"published-1"``), from a TOML file, or as given. A file lays its values over its ``base``
    (``"published"`` unless it names a version, another file, relative to itself, or
    ``"none"``)."""
    if source is None or (isinstance(source, str) and _builtin(source)):
        return published(PUBLISHED if source is None else source)
    if isinstance(source, Profile):
        return source
    path = Path(source)
    try:
        text = path.read_text("utf-8")
    except OSError as error:
        raise ProfileError("", f"cannot read profile {str(path)!r}: {error.strerror}") from None
    try:
        base_name = tomllib.loads(text).get("base", PUBLISHED)
    except tomllib.TOMLDecodeError as error:
        raise ProfileError("", f"{path}: not TOML ({error})") from None
    if not isinstance(base_name, str):
        raise ProfileError("base", f"{path}: base must be a profile name or a file")
    if base_name == "none":
        base = None
    elif _builtin(base_name):
        base = published(base_name)
    else:
        base = load_profile(path.parent / base_name)
    profile = Profile.from_toml(text, base=base, origin=path.name)
    return Profile(profile.name, profile.parameters, profile.description, path=path)


def _reader_data() -> list[Parameter]:
    data = data_file("plate_reader.toml")
    absorbance, fluo, heat = data["absorbance"], data["fluorescence"], data["incubation"]
    stray_low, stray_high = (float(x) for x in absorbance["stray_light"])
    offset_low, offset_high = (float(x) for x in heat["sensor_offset_c"])
    source = "plate_reader.toml: "
    return [
        Parameter(
            "reader.absorbance.stray_light",
            "dimensionless",
            prior=Prior("log_uniform", stray_low, stray_high),
            source=source + absorbance["sources"]["stray_light"],
        ),
        Parameter(
            "reader.absorbance.range_max",
            "dimensionless",
            float(absorbance["od_range_max"]),
            source=source + absorbance["sources"]["od_range_max"],
        ),
        *(
            Parameter(
                f"reader.fluorescence.{name.removesuffix('_mm')}",
                "millimeter",
                float(fluo[name]),
                source=source + fluo["sources"][name],
            )
            for name in ("focal_half_width_mm", "reference_column_mm", "reference_focus_mm")
        ),
        *(
            Parameter(
                f"reader.incubation.{name.removesuffix('_s')}",
                "second",
                float(heat[name]),
                source=source + heat["sources"][name],
            )
            for name in ("chamber_tau_s", "plate_tau_s")
        ),
        Parameter(
            "reader.path.meniscus_contact_angle",
            "degree",
            90.0,
            source=source
            + "90 degrees, a flat surface; "
            + data["geometry"]["sources"]["meniscus"],
        ),
        Parameter(
            "reader.incubation.sensor_offset",
            "delta_degree_Celsius",
            prior=Prior("uniform", offset_low, offset_high),
            source=source + heat["sources"]["sensor_offset_c"],
        ),
    ]


def _pipetting() -> list[Parameter]:
    out = [p for tip in TIP_CLASSES for p in tip_parameters(tip).values()]
    return [*out, film_parameter()]


#: each emulated spectrometer model's detector figures in spectrometer.toml, by key segment
DETECTOR_FIELDS = {
    "dark_noise": ("dark_noise_counts", "dimensionless"),
    "snr_full_signal": ("snr_full_signal", "dimensionless"),
    "offset": ("offset_counts", "dimensionless"),
    "dark_rate": ("dark_counts_per_s", "1 / second"),
    "peak_rate": ("peak_counts_per_s", "1 / second"),
}


def detector_key(model: str, field: str) -> str:
    """The profile key of a spectrometer model's detector figure: ``spectrometer.detector.
    FLAME-S.dark_noise`` (in ADC counts, or counts per second)."""
    return f"spectrometer.detector.{model}.{field}"


def _detectors() -> list[Parameter]:
    out = []
    for model, row in data_file("spectrometer.toml")["models"].items():
        sources = row.get("sources", {})
        for field, (name, unit) in DETECTOR_FIELDS.items():
            source = sources.get(name, sources.get("all", ""))
            out.append(
                Parameter(
                    detector_key(model, field),
                    unit,
                    float(row[name]),
                    source=f"spectrometer.toml [models.{model}] {name}: {source}",
                )
            )
    return out


#: ``species.<dye>.lot.epsilon_ceiling`` in the published profile: far above any lot the
#: published spread draws (exp N(0, 0.03²) reaches 10 only 77 sds out), so no lot is folded
LOT_CEILING_OFF = 10.0
_CEILING_SOURCE = (
    "[A] off: today's physics (no lot comes near 10). The highest epsilon factor a lot reaches "
    "relative to the pure dye's reference: a draw above it is folded below it (c^2 / f). A "
    "lot's absorbance per gram is its content times the pure dye's E1%1cm, at most the pure "
    "dye's, up to the reference value's own uncertainty [V: Commission Regulation (EU) "
    "231/2012, E 129 Allura Red AC: >= 85 % total colouring matters, E1%1cm 540 at ca 504 nm, "
    "SANCO/11368/2011 Rev 3; E 133 Brilliant Blue FCF: >= 85 %, subsidiary colours <= 6 %, "
    "EU Implementing Regulation 2020/173]. Suggested: 1.02 [A: the reference's uncertainty, "
    "not found], with epsilon_factor log_normal mu = ln(1 - subsidiary colours / 2), e.g. "
    "ln 0.985 for Allura Red (<= 3 %) [V2: vendor specification], sigma 0.01-0.02 [A]: the "
    "dye content below 100 % is already in a powder stock's concentration (its grade, "
    "U(0.85, 0.95))"
)


def _dye_lots() -> list[Parameter]:
    """Each dye's lot priors, from its ``batch`` in ``species.toml`` (as
    ``labtools.simulators.world.species.Batch`` draws them)."""
    out = []
    for key, entry in data_file("species.toml").items():
        batch = entry.get("batch") if isinstance(entry, dict) else None
        if not batch:
            continue
        epsilon_sd, shift_sd = (float(batch.get(k, 0.0)) for k in ("epsilon_sd", "shift_nm_sd"))
        source = f"species.toml [{key}] batch (used where the lab's world has batches = true)"
        out += [
            Parameter(
                f"species.{key}.lot.epsilon_factor",
                "dimensionless",
                prior=Prior("log_normal", 0.0, epsilon_sd),
                source=f"{source}: exp N(0, epsilon_sd^2)",
            ),
            Parameter(
                f"species.{key}.lot.shift",
                "nanometer",
                prior=Prior("normal", 0.0, shift_sd),
                source=f"{source}: N(0, shift_nm_sd^2), the bands' shift",
            ),
            Parameter(
                f"species.{key}.lot.epsilon_ceiling",
                "dimensionless",
                LOT_CEILING_OFF,
                source=_CEILING_SOURCE,
            ),
        ]
    return out
