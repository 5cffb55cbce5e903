"""Task families: experiments generated from parts (analytes, matrices, instruments and
budgets, questions), each at five levels of difficulty (:mod:`labtools.session.family`).

- :class:`~.quantify.Quantify` (``quantify``): one analyte's concentration against a certified
  standard, a second absorber beside it where the structure names one.

The parts are in :mod:`.parts`, the levels in :mod:`.levels`, each level's anchors in
:mod:`.anchors`.
"""

from labtools.simulators.families.quantify import Quantify

__all__ = ["Quantify"]
