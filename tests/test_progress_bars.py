"""Progress on the command line: an episode pool tells how many of its episodes are done, in
order, without changing a result; ``labtools eval`` draws it as a bar on a terminal's stderr
and nothing where stderr is a pipe; ``labtools call`` draws a long tool's own reports."""

from __future__ import annotations

import asyncio
import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios

from labtools import Lab
from labtools.cli.progress_bars import calls_bar, episodes_bar, tool_bar
from labtools.session.pool import EpisodePool, episodes


def test_a_pool_tells_each_episode_done_in_order_and_changes_no_result() -> None:
    told: list[tuple[int, int]] = []
    work = episodes("dye_quantification", ["expert", "naive"], range(2), "progress")
    with EpisodePool("local", progress=lambda done, total: told.append((done, total))) as pool:
        counted = pool.run(work)
    with EpisodePool("local") as pool:
        plain = pool.run(work)
    assert told == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    assert [r.reward.total for r in counted] == [r.reward.total for r in plain]


def test_the_episodes_bar_counts_each_run_to_its_total() -> None:
    shown = io.StringIO()
    with episodes_bar("episodes", file=shown, disable=False, mininterval=0) as report:
        for done in range(4):
            report(done, 3)
        report(0, 2)  # a second run of episodes: a new bar
        report(2, 2)
    text = shown.getvalue()
    assert "episodes: 100%" in text and "3/3" in text and "2/2" in text


def test_a_long_tools_reports_draw_its_bar() -> None:
    shown = io.StringIO()
    with Lab.virtual(seed=1) as lab:
        assert lab.call("lh_move_plate", {"plate": "plate_1", "destination": "reader"}).ok
        arguments = {
            "plate": "plate_1",
            "wells": ["A1"],
            "wavelength": {"value": 405, "unit": "nanometer"},
            "interval": {"value": 60, "unit": "second"},
            "reads": 5,
        }
        with tool_bar(
            "reader_read_absorbance_kinetic", file=shown, disable=False, mininterval=0
        ) as progress:
            result = lab.run(
                lab.acall("reader_read_absorbance_kinetic", arguments, progress=progress)
            )
    assert result.ok, result.error
    text = shown.getvalue()
    assert "5/5" in text and "read 5 of 5" in text


def _eval(stderr: int) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "labtools", "eval", "--task", "dye_quantification"]
    command += ["--agent", "expert", "--seeds", "3", "--json"]
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=stderr, check=True, timeout=600)


def test_eval_draws_its_bar_on_a_terminal_and_nothing_into_a_pipe() -> None:
    piped = _eval(subprocess.PIPE)
    assert piped.stderr == b""  # pass^3 of 3 seeds is reported: nothing else to say
    parent, child = pty.openpty()
    # a new terminal is 0 columns wide, where tqdm draws nothing: give it 100
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        on_terminal = _eval(child)
        os.close(child)
        drawn = b""
        while True:
            try:
                chunk = os.read(parent, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(parent)
    assert on_terminal.stdout == piped.stdout  # the report itself is the same
    assert b"episodes:   0%" in drawn and b"0/3" in drawn  # drawn as it starts, then cleared


def test_progress_listener_is_awaited_as_the_read_goes() -> None:
    """The listener ``tool_bar`` gives is a coroutine function, as Lab.acall awaits it."""
    with tool_bar("x", file=io.StringIO(), disable=False) as progress:
        asyncio.run(progress(1, 2, "half"))
        asyncio.run(progress(2, 2, None))


def test_the_calls_bar_counts_a_labs_calls_while_open() -> None:
    shown = io.StringIO()
    with Lab.virtual(seed=1) as lab:
        with calls_bar(lab, "calibrating", file=shown, disable=False, mininterval=0):
            lab.call("lh_get_deck", {})
            lab.call("lh_move_plate", {"plate": "plate_1", "destination": "reader"})
            lab.call("lh_move_plate", {"plate": "nowhere", "destination": "reader"})  # refused
        lab.call("lh_get_deck", {})  # after the block: not counted, nothing drawn
    drawn = [line.split(" [")[0] for line in shown.getvalue().split("\r") if line.strip()]
    assert drawn == [f"calibrating: {n}call" for n in range(4)]  # the fourth call: not counted
