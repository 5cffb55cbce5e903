"""``labtools eval --model PROVIDER:NAME``: its options, its runner, its failures on stderr."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from labtools.session.models import ModelRunner
    from labtools.session.pool import EpisodeResult

#: the exit status of an eval in which some model episode failed (its rows are still printed)
FAILED_EPISODES = 1


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("a model's row (--model)")
    group.add_argument(
        "--model",
        default=None,
        metavar="PROVIDER:NAME",
        help="also run a model on the same episodes: openai (Chat Completions: OpenAI, vLLM, "
        "SGLang, Ollama…), openai-responses, anthropic or gemini; the key from "
        "OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY (or GOOGLE_API_KEY)",
    )
    group.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="the model's endpoint (http://127.0.0.1:8000/v1 for vLLM); without a key in "
        "the environment, a placeholder key is sent",
    )
    group.add_argument(
        "--concurrency",
        type=int,
        default=4,
        metavar="N",
        help="the model's episodes run side by side on N threads (default 4)",
    )
    group.add_argument(
        "--max-retries",
        type=int,
        default=5,
        metavar="N",
        help="the SDK's retries of a failed request (connection, 408, 429, 5xx), with its "
        "backoff (default 5)",
    )
    group.add_argument(
        "--max-turns",
        type=int,
        default=None,
        metavar="N",
        help="model turns per episode (default: the task's call budget)",
    )


def open_runner(args: argparse.Namespace) -> ModelRunner | None:
    """The runner of ``--model`` (``None`` without it); ``ValueError`` (a bad option, no API
    key) or ``ImportError`` (no SDK) for the command to report."""
    if args.model is None:
        if args.base_url is not None:
            raise ValueError("--base-url needs --model")
        return None
    if args.calibrate:
        raise ValueError("--calibrate measures the scripted agents only, not --model")
    for option, value in (("--concurrency", args.concurrency), ("--max-turns", args.max_turns)):
        if value is not None and value < 1:
            raise ValueError(f"{option} must be 1 or more, not {value}")
    if args.max_retries < 0:
        raise ValueError(f"--max-retries must be 0 or more, not {args.max_retries}")
    from labtools.session.models import Model, ModelRunner

    model = Model.parse(
        args.model,
        base_url=args.base_url,
        max_retries=args.max_retries,
        max_turns=args.max_turns,
    )
    return ModelRunner(model, args.concurrency)


def report_failures(task: str, results: Sequence[EpisodeResult]) -> int:
    """One line on stderr for the model's episodes of ``task`` that an error ended (their
    seeds and the first error); returns how many."""
    failed = [r for r in results if r.error is not None]
    if failed:
        seeds = ", ".join(str(r.episode.seed) for r in failed)
        print(
            f"labtools eval: {failed[0].episode.agent} on {task}: {len(failed)} of "
            f"{len(results)} episodes failed (seeds {seeds}), scored as they stood; first: "
            f"{failed[0].error}",
            file=sys.stderr,
        )
    return len(failed)
