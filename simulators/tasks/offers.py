"""The virtual lab's tools by what they do: a task offers the groups its experiment needs
(:attr:`labtools.session.Task.lab_tools`), and its agent reads no catalogue of the rest."""

from __future__ import annotations

__all__ = [
    "ABSORBANCE",
    "BALANCE",
    "FLUORESCENCE",
    "KINETIC",
    "LIQUID",
    "LUMINESCENCE",
    "SPECTROMETER",
    "TEMPERATURE",
    "THERMOMETER",
]

#: the liquid handler: tips, single moves and batches, plates, the deck
LIQUID = frozenset(
    {
        "lh_get_deck",
        "lh_pick_up_tips",
        "lh_drop_tips",
        "lh_aspirate",
        "lh_dispense",
        "lh_mix",
        "lh_transfer",
        "lh_move_plate",
    }
)
#: the plate reader's absorbance at a wavelength, and its spectrum
ABSORBANCE = frozenset({"reader_read_absorbance", "reader_read_absorbance_spectrum"})
#: absorbance read over time
KINETIC = frozenset({"reader_read_absorbance_kinetic"})
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
