"""The virtual lab's tools by what they do: a task offers the groups its experiment needs
(:attr:`labtools.session.Task.lab_tools`), and its agent reads no catalogue of the rest."""

from __future__ import annotations

__all__ = [
    "ABSORBANCE",
    "BALANCE",
    "DATA",
    "ENDPOINT",
    "FLUORESCENCE",
    "KINETIC",
    "LIQUID",
    "LUMINESCENCE",
    "SPECTROMETER",
    "TEMPERATURE",
    "THERMOMETER",
    "TIPS",
]

#: the liquid handler as an experiment uses it: the deck, batches of transfers (tips picked up,
#: mixed and dropped as the batch says), plates moved
LIQUID = frozenset({"lh_get_deck", "lh_transfer", "lh_move_plate"})
#: tips fitted to chosen channels and dropped, for an experiment on the channels themselves (a
#: batch of transfers with tips "mounted" then pipettes with them)
TIPS = frozenset({"lh_pick_up_tips", "lh_drop_tips"})
#: windows of a kept spectrum or kinetic read, whose values come as a handle past 600
DATA = frozenset({"reader_get_data"})
#: the plate reader's absorbance at a wavelength, and its spectrum
ABSORBANCE = frozenset({"reader_read_absorbance", "reader_read_absorbance_spectrum"}) | DATA
#: absorbance at a wavelength alone, for an experiment whose statement names its wavelengths
ENDPOINT = frozenset({"reader_read_absorbance"})
#: absorbance read over time
KINETIC = frozenset({"reader_read_absorbance_kinetic"}) | DATA
FLUORESCENCE = frozenset({"reader_read_fluorescence"})
LUMINESCENCE = frozenset({"reader_read_luminescence"})
#: the reader's thermometer alone
THERMOMETER = frozenset({"reader_get_temperature"})
#: the reader's chamber: heating, and its thermometer
TEMPERATURE = THERMOMETER | {"reader_set_temperature", "reader_stop_heating"}
#: the cuvette spectrometer
SPECTROMETER = frozenset(
    {
        "spec_set_integration_time",
        "spec_acquire_dark",
        "spec_acquire_reference",
        "spec_acquire_spectrum",
        "spec_measure_absorbance",
        "spec_get_data",
    }
)
BALANCE = frozenset({"balance_get_info", "balance_zero", "balance_tare", "balance_weigh"})
