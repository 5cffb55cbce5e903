"""The driver's per-backend paths: Molecular Devices' own signatures, whole-plate-only readers,
backends that cannot do a read, and PLR exceptions mapped onto labtools' error codes.

The Molecular Devices backends run their real command sequence; only the serial transport and
the data transfer are replaced (as PLR's own tests do), so the commands checked here are what a
SpectraMax would receive.
"""

from __future__ import annotations

from typing import Any

import pytest
from reader_rig import nm

from labtools import Lab
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader, limits_for
from labtools.drivers.pylabrobot.plr import (
    CLARIOstarBackend,
    CytationBackend,
    MolecularDevicesSpectraMax384PlusBackend,
    MolecularDevicesSpectraMaxGeminiEMBackend,
    MolecularDevicesSpectraMaxM5Backend,
    PlateReader,
    PlateReaderBackend,
    ReadMode,
    ReadType,
    cor_96_wellplate_360uL_Fb,
)
from labtools.drivers.pylabrobot.reader_calls import ReadCalls


def _grid(base: float) -> list[list[float]]:
    return [[base + r + c / 100 for c in range(12)] for r in range(8)]


class _FakeTransport:
    """Replaces a Molecular Devices backend's serial I/O and data transfer."""

    commands: list[str]
    saturate: str | None = None

    async def setup(self) -> None:
        self.commands = []

    async def stop(self) -> None:
        pass

    async def send_command(
        self, command: str, timeout: int = 60, num_res_fields: Any = None
    ) -> list[str]:
        self.commands.append(command)
        return ["OK"]

    async def _read_now(self) -> None:
        self.commands.append("<read>")

    async def _wait_for_idle(self, timeout: int = 600) -> None:
        pass

    async def _transfer_data(self, settings: Any) -> list[dict]:
        if settings.read_mode == ReadMode.ABS:
            if settings.read_type == ReadType.SPECTRUM:
                ss = settings.spectrum_settings
                wls = [ss.start_wavelength + i * ss.step for i in range(ss.num_steps)]
            else:
                wls = list(settings.wavelengths)
            out = [
                {"wavelength": wl, "data": _grid(wl / 1000), "temperature": 25.0, "time": 0.0}
                for wl in wls
            ]
        elif settings.read_mode == ReadMode.FLU:
            out = [
                {
                    "ex_wavelength": settings.excitation_wavelengths[0],
                    "em_wavelength": settings.emission_wavelengths[0],
                    "data": _grid(100.0),
                    "temperature": 25.0,
                    "time": 0.0,
                }
            ]
        else:
            out = [{"em_wavelength": 0, "data": _grid(1000.0), "temperature": 25.0, "time": 0.0}]
        if self.saturate:
            for measurement in out:
                measurement["data"][1][1] = float("inf")  # B2 reads #SAT
        return out


class FakeM5(_FakeTransport, MolecularDevicesSpectraMaxM5Backend):
    pass


class Fake384Plus(_FakeTransport, MolecularDevicesSpectraMax384PlusBackend):
    pass


class FakeGeminiEM(_FakeTransport, MolecularDevicesSpectraMaxGeminiEMBackend):
    pass


def _lab(backend: PlateReaderBackend) -> Lab:
    reader = PlateReader(name="reader", size_x=130, size_y=90, size_z=30, backend=backend)
    reader.assign_child_resource(cor_96_wellplate_360uL_Fb(name="plate_1"))
    return Lab([PLRPlateReader("reader", reader)])


def _abs(lab: Lab, wells: list[str], wavelength: float = 450) -> Any:
    return lab.call(
        "reader_read_absorbance", {"plate": "plate_1", "wavelength": nm(wavelength), "wells": wells}
    )


# -- Molecular Devices ---------------------------------------------------------------------------
def test_spectramax_absorbance_takes_the_dedicated_path() -> None:
    backend = FakeM5(port="fake")
    result = _abs(_lab(backend), ["A1", "B3"])
    assert result.ok, result.error
    assert result.data["values"] == {"A1": pytest.approx(0.45), "B3": pytest.approx(1.47)}
    assert "!WAVELENGTH 450" in backend.commands
    assert "!READTYPE ABSPLA" in backend.commands


def test_spectramax_spectrum_is_one_native_scan() -> None:
    backend = FakeM5(port="fake")
    result = _lab(backend).call(
        "reader_read_absorbance_spectrum",
        {"plate": "plate_1", "wells": ["A1"], "start": nm(400), "stop": nm(440), "step": nm(10)},
    )
    assert result.ok, result.error
    assert "!MODE SPECTRUM 400 10 5" in backend.commands
    assert backend.commands.count("<read>") == 1
    assert result.data["values"]["A1"] == pytest.approx([0.40, 0.41, 0.42, 0.43, 0.44])


def test_spectramax_fluorescence_and_luminescence() -> None:
    backend = FakeM5(port="fake")
    lab = _lab(backend)
    fluor = lab.call(
        "reader_read_fluorescence",
        {
            "gain": 0,
            "focal_height": {"value": 0, "unit": "millimeter"},
            "plate": "plate_1",
            "wells": ["H12"],
            "excitation_wavelength": nm(490),
            "emission_wavelength": nm(515),
        },
    )
    assert fluor.ok, fluor.error
    assert fluor.data["values"]["H12"] == pytest.approx(107.1)
    assert {"!EXWAVELENGTH 490", "!EMWAVELENGTH 515", "!EMFILTER 7"} <= set(backend.commands)
    lum = lab.call("reader_read_luminescence", {"plate": "plate_1", "wells": ["A2"]})
    assert lum.ok and lum.data["values"]["A2"] == pytest.approx(1000.0)
    assert "!EMWAVELENGTH 0" in backend.commands


def test_spectramax_saturated_well_is_flagged_not_given_a_number() -> None:
    backend = FakeM5(port="fake")
    backend.saturate = "B2"
    lab = _lab(backend)
    assert _abs(lab, ["A1"]).ok
    result = _abs(lab, ["A1", "B2"])
    assert result.ok and result.data["saturated"] == ["B2"]
    assert set(result.data["values"]) == {"A1"}


def test_spectramax_384_plus_has_no_fluorescence() -> None:
    lab = _lab(Fake384Plus(port="fake"))
    assert _abs(lab, ["A1"]).ok
    result = lab.call(
        "reader_read_fluorescence",
        {
            "gain": 0,
            "focal_height": {"value": 0, "unit": "millimeter"},
            "plate": "plate_1",
            "wells": ["A1"],
            "excitation_wavelength": nm(490),
            "emission_wavelength": nm(515),
        },
    )
    assert result.error["code"] == "not_supported"


def test_gemini_em_reads_fluorescence_but_not_absorbance() -> None:
    backend = FakeGeminiEM(port="fake")
    lab = _lab(backend)
    assert _abs(lab, ["A1"]).error["code"] == "not_supported"
    spectrum = lab.call(
        "reader_read_absorbance_spectrum",
        {"plate": "plate_1", "wells": ["A1"], "start": nm(400), "stop": nm(410), "step": nm(5)},
    )
    assert spectrum.error["code"] == "not_supported"
    fluor = lab.call(
        "reader_read_fluorescence",
        {
            "gain": 0,
            "focal_height": {"value": 0, "unit": "millimeter"},
            "plate": "plate_1",
            "wells": ["A1"],
            "excitation_wavelength": nm(490),
            "emission_wavelength": nm(515),
        },
    )
    assert fluor.ok, fluor.error


# -- other backends ------------------------------------------------------------------------------
def test_clariostar_reads_whole_plates_only() -> None:
    backend = CLARIOstarBackend.__new__(CLARIOstarBackend)  # its constructor needs pylibftdi
    reader = PlateReader(name="reader", size_x=1, size_y=1, size_z=1, backend=backend)
    calls = ReadCalls(reader, 8.5)
    assert calls.whole_plate_only
    assert (calls.absorbance_plan, calls.spectrum_plan) == ("front_end", "repeat")


def test_biotek_limits_come_from_plr() -> None:
    backend = CytationBackend.__new__(CytationBackend)  # its constructor needs pylibftdi
    limits = limits_for(backend)
    assert (limits.absorbance.low, limits.absorbance.high) == (230, 999)
    assert (limits.excitation.high, limits.emission.high) == (700, 700)


class Misfit(PlateReaderBackend):
    """A backend whose reads do not take PLR's standard arguments, or fail as told."""

    def __init__(self, failure: BaseException | None = None) -> None:
        super().__init__()
        self.failure = failure

    async def setup(self) -> None: ...
    async def stop(self) -> None: ...
    async def open(self) -> None: ...
    async def close(self, plate: Any = None) -> None: ...

    async def read_absorbance(self, plate: Any, wells: Any, wavelength: int) -> list[dict]:
        if self.failure is not None:
            raise self.failure
        return [{"wavelength": wavelength, "data": _grid(0.0), "temperature": 25.0, "time": 0.0}]

    async def read_fluorescence(self, plate: Any, channels: list[int]) -> list[dict]:  # type: ignore[override]
        raise AssertionError("never called")

    async def read_luminescence(self, plate: Any, wells: Any, focal_height: float) -> list[dict]:
        raise NotImplementedError("no luminescence module")


def test_mismatched_signature_and_missing_module_are_not_supported() -> None:
    lab = _lab(Misfit())
    fluor = lab.call(
        "reader_read_fluorescence",
        {
            "gain": 0,
            "focal_height": {"value": 0, "unit": "millimeter"},
            "plate": "plate_1",
            "wells": ["A1"],
            "excitation_wavelength": nm(490),
            "emission_wavelength": nm(515),
        },
    )
    assert fluor.error["code"] == "not_supported"
    lum = lab.call("reader_read_luminescence", {"plate": "plate_1", "wells": ["A1"]})
    assert lum.error["code"] == "not_supported" and "luminescence" in lum.error["message"]
    spectrum = lab.call(
        "reader_read_absorbance_spectrum",
        {"plate": "plate_1", "wells": ["A1"], "start": nm(400), "stop": nm(402), "step": nm(1)},
    )
    assert spectrum.ok and len(spectrum.data["values"]["A1"]) == 3


@pytest.mark.parametrize(
    "failure,code",
    [
        (ValueError("wavelength must be within 230-999"), "out_of_range"),
        (TimeoutError("no reply"), "timeout"),
        (NotImplementedError("not yet"), "not_supported"),
        (RuntimeError("lamp failure"), "instrument_error"),
        (KeyError("x"), "instrument_error"),
    ],
)
def test_backend_exceptions_map_to_error_codes(failure: BaseException, code: str) -> None:
    result = _abs(_lab(Misfit(failure)), ["A1"])
    assert result.error["code"] == code
    assert "Misfit" in result.error["message"]


def test_a_missing_libusb_is_an_instrument_error_with_a_hint() -> None:
    """pyusb raises NoBackendError (a ValueError) without libusb: the machine's fault, so an
    instrument error that says what to install, not an out-of-range argument."""
    import usb.core

    from labtools.drivers.pylabrobot.reader_errors import tool_error
    from labtools.drivers.usb import LIBUSB_HINT

    error = tool_error(usb.core.NoBackendError("No backend available"), "setup", "CLARIOstar")
    assert error.code == "instrument_error" and error.hint == LIBUSB_HINT
    assert tool_error(ValueError("wavelength 1200"), "read", "CLARIOstar").code == "out_of_range"
