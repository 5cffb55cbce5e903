"""Data out the way labs keep it: plate reads as tidy and plate-grid CSV, spectra as JCAMP-DX,
readings as Allotrope Simple Model JSON (written and read), and a run bundle under a content
hash (``labtools export``)."""

from labtools.records.asm import AsmDevice, plate_reader_asm, spectrophotometry_asm
from labtools.records.asm_read import AsmDocument, AsmMeasurement, AsmSeries, read_asm
from labtools.records.bundle import Bundle, write_bundle
from labtools.records.jcamp import jcamp_dx
from labtools.records.readings import Reading, Spectrum, readings, spectra
from labtools.records.tables import grid_csv, tidy_csv

__all__ = [
    "AsmDevice",
    "AsmDocument",
    "AsmMeasurement",
    "AsmSeries",
    "Bundle",
    "Reading",
    "Spectrum",
    "grid_csv",
    "jcamp_dx",
    "plate_reader_asm",
    "read_asm",
    "readings",
    "spectra",
    "spectrophotometry_asm",
    "tidy_csv",
    "write_bundle",
]
