"""``labtools tools``, ``labtools call`` and ``labtools schemas``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from labtools.cli.common import add_lab_options, open_lab
from labtools.export import FORMATS

#: schemas/ files: the portable catalogue and one file per provider format
SCHEMA_FILES = {
    "catalogue.json": "json-schema",
    "openai-chat.json": "openai-chat",
    "openai-responses.json": "openai-responses",
    "anthropic.json": "anthropic",
    "gemini.json": "gemini",
    "mcp.json": "mcp",
}


def register(sub: argparse._SubParsersAction) -> None:
    tools = sub.add_parser("tools", help="print the tool catalogue as JSON")
    add_lab_options(tools)
    tools.add_argument("--format", default="json-schema", choices=FORMATS)
    tools.add_argument("--names", action="store_true", help="print only the tool names")
    tools.set_defaults(func=_tools)

    call = sub.add_parser("call", help="call one tool with JSON arguments; print the result")
    add_lab_options(call)
    call.add_argument("name", help="tool name, e.g. lh_get_deck")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    call.set_defaults(func=_call)

    schemas = sub.add_parser("schemas", help="write (or --check) the default lab's schemas/")
    schemas.add_argument("--dir", type=Path, default=Path("schemas"))
    schemas.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if the files differ from what the code generates",
    )
    schemas.set_defaults(func=_schemas)


def _tools(args: argparse.Namespace) -> int:
    with open_lab(args) as lab:
        if args.names:
            print("\n".join(lab.tool_names()))
        else:
            print(json.dumps(lab.tools(args.format), indent=2, ensure_ascii=False))
    return 0


def _call(args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        print(
            json.dumps(
                {
                    "ok": False,
                    "error": {
                        "code": "invalid_arguments",
                        "message": f"not JSON: {exc}",
                        "field": "",
                        "hint": "pass one JSON object",
                    },
                }
            )
        )
        return 2
    from labtools.cli.progress_bars import tool_bar  # tqdm: imported by this command alone

    with open_lab(args) as lab, tool_bar(args.name) as progress:
        result = lab.run(lab.acall(args.name, arguments, progress=progress))
    print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    return 0 if result.ok else 1


def render_schemas() -> dict[str, str]:
    """The contents of every schemas/ file, generated from the default (virtual) lab."""
    from labtools.lab import Lab

    with Lab.virtual(seed=0) as lab:
        return {
            name: json.dumps(lab.tools(fmt), indent=2, ensure_ascii=False) + "\n"
            for name, fmt in SCHEMA_FILES.items()
        }


def _schemas(args: argparse.Namespace) -> int:
    rendered = render_schemas()
    if args.check:
        stale = [
            n
            for n, text in rendered.items()
            if not (args.dir / n).is_file() or (args.dir / n).read_text("utf-8") != text
        ]
        if stale:
            print(
                f"schemas out of date: {', '.join(stale)}; run 'labtools schemas'", file=sys.stderr
            )
            return 1
        print(f"schemas in sync ({len(rendered)} files)")
        return 0
    args.dir.mkdir(parents=True, exist_ok=True)
    for name, text in rendered.items():
        (args.dir / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(rendered)} files to {args.dir}")
    return 0
