"""The verifiers taskset id ``labtools_verifiers`` (``vf-eval labtools_verifiers``): verifiers
finds a taskset by a top-level module that exports it. The taskset is
:class:`labtools.session.verifiers.LabTaskset`."""

from labtools.session.verifiers import LabTaskset

__all__ = ["LabTaskset"]
