"""The named splits of the task families, and the secret each split's worlds are drawn with.

- ``train``: every instance not held out, under a secret drawn fresh for the run: never
  published, so no list of seeds names the worlds a policy trained on.
- ``validation``: the same instances under the public dev secret
  (:data:`~labtools.session.evaluate.DEV_SECRET`): numbers anyone can reproduce, and anyone
  can study, so they support no held-out claim.
- ``test-id``: the same instances under a secret the evaluator supplies.
- ``test-ood``: the held-out instances (species and combinations of parts no other split has:
  :meth:`~labtools.session.family.Family.held_out`) under the evaluator's secret.

The package holds no test secret: it comes from a file (``labtools eval --secret-file``) or
the environment variable :data:`TEST_SECRET_ENV`, and one of the package's public secrets is
refused. A level's evaluation and calibration seeds spread over its instances (:func:`played`).

A split's instances over every registered family are numbered (:func:`split_size`,
:func:`split_instance`): families in id order, each level by level, as
:func:`split_instances` lists them. OpenEnv's Task API serves that numbering.
"""

from __future__ import annotations

import functools
import math
import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from labtools.session.family import Family, InstanceName

__all__ = [
    "SPLITS",
    "TEST_SECRET_ENV",
    "MissingSecret",
    "UnknownSplit",
    "check_test_secret",
    "played",
    "split_instance",
    "split_instances",
    "split_secret",
    "split_size",
]

SPLITS = ("train", "validation", "test-id", "test-ood")
#: the environment variable a test split's secret is read from
TEST_SECRET_ENV = "LABTOOLS_TEST_SECRET"
#: a test secret shorter than this is refused: it could be guessed [A: 128 bits as hex]
MIN_SECRET_CHARS = 16

T = TypeVar("T")


class MissingSecret(ValueError):
    """A test split was asked for without the evaluator's secret, or with a public one."""


class UnknownSplit(ValueError):
    """A split name that is not one of :data:`SPLITS`."""


def played(instances: Sequence[T], seed: int) -> T:
    """The instance seed ``seed`` plays of a level's ``instances``: seeds step through them by
    the golden ratio of their number (made coprime with it), so any run of consecutive seeds
    spreads over the whole list (every structure once per ``len(instances)`` seeds) rather
    than over its first entries."""
    n = len(instances)
    if n == 0:
        raise ValueError("no instances to play")
    return instances[(seed * _stride(n)) % n]


@functools.cache
def _stride(n: int) -> int:
    stride = max(1, round(n * (math.sqrt(5.0) - 1.0) / 2.0))
    while math.gcd(stride, n) != 1:
        stride += 1
    return stride


def split_instances(family: Family, split: str) -> list[InstanceName]:
    """The instances of ``family`` in ``split``, level by level."""
    _check(split)
    return list(family.instances(held_out=split == "test-ood"))


def split_size(split: str) -> int:
    """How many instances ``split`` holds over every registered family."""
    return sum(len(family.levels) * len(structures) for family, structures in _blocks(split))


def split_instance(split: str, index: int) -> InstanceName:
    """Instance number ``index`` (0 ≤ index < :func:`split_size`) of ``split`` over every
    registered family; ``IndexError`` outside that range (a negative index too)."""
    if index >= 0:
        for family, structures in _blocks(split):
            size = len(family.levels) * len(structures)
            if index < size:
                level, structure = divmod(index, len(structures))
                return InstanceName(family.id, family.levels[level], structures[structure])
            index -= size
    raise IndexError(f"split {split!r} has instances 0 to {split_size(split) - 1}")


@functools.cache
def _blocks(split: str) -> tuple[tuple[Family, tuple[str, ...]], ...]:
    """Each registered family, in id order, with its structures in ``split``."""
    from labtools.session.registry import family_ids, load_family

    _check(split)
    held_out = split == "test-ood"
    blocks = []
    for family_id in family_ids():
        family = load_family(family_id)
        blocks.append(
            (family, tuple(s for s in family.structures() if family.held_out(s) == held_out))
        )
    return tuple(blocks)


def split_secret(
    split: str,
    *,
    secret_file: str | Path | None = None,
    environ: Mapping[str, str] = os.environ,
) -> str:
    """The secret ``split``'s worlds are drawn with: a fresh one for ``train``, the public dev
    secret for ``validation``, and for the test splits the evaluator's, from ``secret_file``
    or :data:`TEST_SECRET_ENV` (:class:`MissingSecret` without one, or with a public one)."""
    from labtools.session.evaluate import DEV_SECRET

    _check(split)
    if split == "train":
        return secrets.token_hex(16)
    if split == "validation":
        return DEV_SECRET
    if secret_file is not None:
        text = Path(secret_file).read_text("utf-8").strip()
        source = f"the file {secret_file}"
    else:
        text = environ.get(TEST_SECRET_ENV, "").strip()
        source = f"${TEST_SECRET_ENV}"
    if not text:
        raise MissingSecret(
            f"the {split} split needs the evaluator's secret: give --secret-file FILE or set "
            f"{TEST_SECRET_ENV}; labtools holds none"
        )
    check_test_secret(text, source)
    return text


def check_test_secret(secret: str | bytes, source: str) -> None:
    """:class:`MissingSecret` if ``secret`` (from ``source``) is one of the package's public
    secrets or shorter than :data:`MIN_SECRET_CHARS`."""
    from labtools.session.evaluate import CALIBRATION_SECRET, DEV_SECRET

    public = (DEV_SECRET, CALIBRATION_SECRET)
    if secret in public or secret in [p.encode() for p in public] or len(secret) < MIN_SECRET_CHARS:
        raise MissingSecret(
            f"{source} holds a public or short secret: a test split's secret is the "
            f"evaluator's own, {MIN_SECRET_CHARS} characters or more"
        )


def _check(split: str) -> None:
    if split not in SPLITS:
        raise UnknownSplit(f"unknown split {str(split)[:40]!r}; splits: {', '.join(SPLITS)}")
