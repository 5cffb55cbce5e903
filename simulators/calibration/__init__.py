"""Calibration through the tools: runs any lab answers (:mod:`.protocol`, :mod:`.gravimetric`),
maximum-likelihood fits of the simulator's parameters from their readings (:mod:`.fit_reader`,
:mod:`.fit_gravimetric` or :mod:`.fit_pipetting`, :mod:`.fit_spectrometer`), and both together
(:mod:`.calibrate`)."""

from labtools.simulators.calibration.calibrate import RUNS, calibrate, fit_records, run_all

__all__ = ["RUNS", "calibrate", "fit_records", "run_all"]
