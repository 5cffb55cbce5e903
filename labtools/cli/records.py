"""``labtools export``: a run's journal as a bundle of the files labs keep, or as Allotrope
Simple Model JSON (``--format asm``)."""

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
    export.add_argument(
        "--format",
        choices=("bundle", "asm"),
        default="bundle",
        help="bundle (default), or asm: plate reads as plate_reads.asm.json (ASM plate reader) "
        "and spectrometer spectra as spectra.asm.json (ASM spectrophotometry)",
    )
    export.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    from labtools.journal import read_journal
    from labtools.records import write_bundle

    if args.format == "asm":
        return _export_asm(args)
    bundle = write_bundle(read_journal(args.journal), args.out, config=args.config)
    print(f"{bundle.path}: {len(bundle.files)} files, sha256 {bundle.hash}")
    return 0


def _export_asm(args: argparse.Namespace) -> int:
    import json

    from labtools.journal import read_journal
    from labtools.records import plate_reader_asm, spectrophotometry_asm

    events = list(read_journal(args.journal))
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, write in (
        ("plate_reads.asm.json", plate_reader_asm),
        ("spectra.asm.json", spectrophotometry_asm),
    ):
        document = write(events, file_name=name)
        if document is not None:
            path = args.out / name
            path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
            written.append(str(path))
    if not written:
        print(f"{args.journal}: no plate read or spectrum to write")
        return 1
    print("\n".join(written))
    return 0
