"""Fidelity as a number: a lab and its twin run the same calibration protocol through the
tools, and the twin's predictive lab (its fitted values drawn from their uncertainty) is held
against the lab's readings (coverage, a two-sample test per reading group), its fitted values
against the lab's truth or the lab's own fit (z-scores), and its task rewards against the lab's
(:mod:`.fidelity`)."""

from labtools.simulators.fidelity.fidelity import fidelity, twin_replicates
from labtools.simulators.fidelity.predictive import Predictive, Uncertainty, uncertainty

__all__ = ["Predictive", "Uncertainty", "fidelity", "twin_replicates", "uncertainty"]
