"""Task families: experiments generated from parts (analytes, matrices, instruments and
budgets, questions), each at five levels of difficulty (:mod:`labtools.session.family`).

- :class:`~.quantify.Quantify` (``quantify``): one analyte's concentration against a certified
  standard, a second absorber beside it where the structure names one.
- :class:`~.mixture.Mixture` (``mixture``): which of three to five candidates a sample holds,
  and how much of each.

The parts are in :mod:`.parts`, the levels in :mod:`.levels`, each level's anchors in
:mod:`.anchors`, what instances share in :mod:`.task` and what experts do on a plate in
:mod:`.protocol`.
"""

from labtools.simulators.families.mixture import Mixture
from labtools.simulators.families.quantify import Quantify

__all__ = ["Mixture", "Quantify"]
