"""Task families: experiments generated from parts (analytes, matrices, instruments and
budgets, questions), each at five levels of difficulty (:mod:`labtools.session.family`),
registered through the ``labtools.families`` entry points.

- ``quantify`` (:mod:`.quantify`): one analyte's concentration against a certified standard, a
  second absorber beside it where the structure names one; ``cuvette`` the same in the
  spectrometer's cuvette, ``fluorimetry`` a fluorophore by its fluorescence in a coloured
  matrix (standard additions).
- ``mixture`` (:mod:`.mixture`): which of three to five candidates a sample holds, and how much
  of each; ``identify``: which candidate, from the library's spectra alone.
- ``hypothesis`` (:mod:`.hypothesis`, the grammar in :mod:`.claims`): the mixture's world; the
  agent states a claim, tests it and gives its probability.
- ``stability``: which candidate an old stock holds, how much of its label is left, has it
  faded.
- ``equilibrium``: an indicator's apparent pKa in the lab's buffers; ``fluor_pka`` a
  fluorescent probe's, by fluorescence; ``ph`` a sample's pH with an indicator;
  ``isosbestic`` an indicator's isosbestic point.
- ``kinetics``: an enzyme's Km and kcat per labelled site; ``inhibition`` an inhibitor's
  mechanism and Ki; ``ic50`` its IC50 at a stated substrate level; ``screen`` which compounds
  inhibit; ``activity`` a stock's units per mL; ``arrhenius`` the activation energy;
  ``thermal`` the half-life of heat inactivation.
- ``target``: a solution prepared to read as asked.
- ``luminescence``: the ATP in a plate's samples by a glow reagent's light, a bright control
  leaking into its neighbours.
- ``wide_range``: a cofactor in samples spanning four decades, each read by absorbance or
  fluorescence as its concentration allows.
- ``detection_limit``: a method's LOD and LOQ; ``range``: the reader's stray light (its linear
  range); ``pipette``: a liquid-handler channel calibrated gravimetrically (ISO 8655-6).

What several share: the analytes in :mod:`.parts`, the levels in :mod:`.levels`, each level's
anchors in :mod:`.anchors`, how a family builds its instances in :mod:`.levelled`, what
instances have in common in :mod:`.task` and what experts do on a plate in :mod:`.protocol`;
a family's own parts, task and expert are modules of their own (``<family>_parts.py``,
``<family>.py``, ``<family>_expert.py``).
"""
