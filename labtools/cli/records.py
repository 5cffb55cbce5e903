"""``labtools export``: a run's journal as a bundle of the files labs keep."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser(
        "export",
        help="write a run bundle: journal, config, versions, plate reads as CSV, spectra "
        "as JCAMP-DX, and a manifest with a content hash",
    )
    export.add_argument("journal", type=Path, help="the run's JSONL journal")
    export.add_argument("--out", type=Path, required=True, help="directory to write")
    export.add_argument(
        "--config",
        type=Path,
        default=None,
        help="the lab configuration used (default: the one the journal names)",
    )
    export.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    from labtools.journal import read_journal
    from labtools.records import write_bundle

    bundle = write_bundle(read_journal(args.journal), args.out, config=args.config)
    print(f"{bundle.path}: {len(bundle.files)} files, sha256 {bundle.hash}")
    return 0
