"""Task families: experiments generated from parts (analytes, matrices, instruments and
budgets, questions), each at five levels of difficulty (:mod:`labtools.session.family`),
registered through the ``labtools.families`` entry points.

- ``quantify`` (:mod:`.quantify`): one analyte's concentration against a certified standard, a
  second absorber beside it where the structure names one.
- ``mixture`` (:mod:`.mixture`): which of three to five candidates a sample holds, and how much
  of each.
- ``hypothesis`` (:mod:`.hypothesis`, the grammar in :mod:`.claims`): the mixture's world; the
  agent states a claim, tests it and gives its probability.
- ``equilibrium`` (:mod:`.equilibrium`): an indicator's apparent pKa in the lab's buffers.
- ``identify`` (:mod:`.identify`): which candidate a sample is, from the library's spectra
  alone, in a coloured matrix.
- ``kinetics`` (:mod:`.kinetics`): an enzyme's Km and kcat per labelled site.
- ``target`` (:mod:`.target`): a solution prepared to read as asked.

What several share: the analytes in :mod:`.parts`, the levels in :mod:`.levels`, each level's
anchors in :mod:`.anchors`, what instances have in common in :mod:`.task` and what experts do
on a plate in :mod:`.protocol`; a family's own parts, task and expert are modules of their own
(``<family>_parts.py``, ``<family>.py``, ``<family>_expert.py``).
"""
