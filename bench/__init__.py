"""Benchmarks: each prints its measurements beside an anchor measured in the same run.

Run all with ``python -m bench`` (or ``make bench``), one with ``python -m bench.core``.
Nothing here asserts a time: these machines are shared and noisy; ratios are what to read.
"""
