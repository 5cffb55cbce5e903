"""Data out the way labs keep it: plate reads as tidy and plate-grid CSV, spectra as JCAMP-DX,
and a run bundle under a content hash (``labtools export``)."""

from labtools.records.bundle import Bundle, write_bundle
from labtools.records.jcamp import jcamp_dx
from labtools.records.readings import Reading, Spectrum, readings, spectra
from labtools.records.tables import grid_csv, tidy_csv

__all__ = [
    "Bundle",
    "Reading",
    "Spectrum",
    "grid_csv",
    "jcamp_dx",
    "readings",
    "spectra",
    "tidy_csv",
    "write_bundle",
]
