"""The live view's cost to a call, and how soon a page hears of a change.

One virtual lab, a 300 µL tip on channel 0, and the moving pair of ``bench.shadow`` (an
aspirate of 100 µL from ``reservoir:A1`` and its dispense back), timed in rounds that
interleave three conditions: the view closed (no server); open with no page (the server
running, the lab watched); open with a page connected (a client reading the event stream on a
thread of this process, so the state is read and sent as the lab changes: the server's whole
cost, without a browser's drawing). Per call: wall time, the calling thread's CPU time (best
round: what the watcher adds to the call itself) and the CPU time of the view's threads (the
server's reads and sends, the client's parsing; median round), each thread's own CPU clock, which
a busy machine disturbs less than wall time; goal: the two CPU times together, with a page
connected, ≤ 1.05× the call with the view closed (issue 22).

Then the latency: from the return of a dispense that colours a well, half a second after the
call before it, to the arrival at the client of the state showing that colour (median and worst
of the dispenses made). In a busy run a page lags the lab by up to ``MIN_INTERVAL_S`` (0.2 s)
more, by design: the state is read no more often than that.

Run: ``python -m bench.view``.
"""

from __future__ import annotations

import gc
import json
import statistics
import threading
import time
import urllib.request

from bench.shadow import aspirate_dispense
from bench.timing import few, restore_sigint, row
from labtools import Lab
from labtools.view import ViewServer, open_view

UL = {"value": 100.0, "unit": "microliter"}


class _Page:
    """A client reading the view's event stream on a thread: the latest state and when it came."""

    def __init__(self, url: str) -> None:
        self.stream = urllib.request.urlopen(url + "events", timeout=60)
        self.state: dict[str, object] = {}
        self.at = 0.0
        self.states = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        event = ""
        try:
            for raw in self.stream:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "state":
                    state = json.loads(line[6:])
                    with self.states:
                        self.state, self.at = state, time.perf_counter()
                        self.states.notify_all()
        except (OSError, ValueError, AttributeError):  # the stream closed under it
            return

    def close(self) -> None:
        self.stream.close()


def _cpu_s(thread: threading.Thread | None) -> float:
    """CPU seconds a thread has used (0 for none)."""
    if thread is None or thread.ident is None:
        return 0.0
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def _cost() -> None:
    rounds, number = few(15, 2), few(250, 5)
    conditions = ("closed", "open, no page", "open, page")
    wall = dict.fromkeys(conditions, float("inf"))
    caller = dict.fromkeys(conditions, float("inf"))  # the calling thread's CPU per call
    viewer: dict[str, list[float]] = {c: [] for c in conditions}  # the view's threads' CPU
    with Lab.virtual(0) as lab:
        lab.lh.pick_up_tips("tips_300ul", [0])
        pair = aspirate_dispense(lab)
        for _ in range(few(20, 1)):
            pair()
        for _ in range(rounds):
            for condition in conditions:
                server: ViewServer | None = None
                page: _Page | None = None
                if condition != "closed":
                    server = open_view(lab)
                    if condition == "open, page":
                        page = _Page(server.url)
                    time.sleep(0.3)  # started, the first state read (and sent)
                threads = [server.thread if server else None, page.thread if page else None]
                gc.disable()
                view_cpu = sum(_cpu_s(t) for t in threads)
                start, start_cpu = time.perf_counter(), time.thread_time()
                for _ in range(number):
                    pair()
                calls = number * 2
                wall[condition] = min(wall[condition], (time.perf_counter() - start) / calls)
                caller[condition] = min(caller[condition], (time.thread_time() - start_cpu) / calls)
                viewer[condition].append((sum(_cpu_s(t) for t in threads) - view_cpu) / calls)
                gc.enable()
                if server is not None:
                    server.stop()  # ends the stream too
                if page is not None:
                    page.close()
    base = caller["closed"]
    print("moving call (aspirate or dispense of 100 µL), µs per call:")
    for condition in conditions:
        own, view = caller[condition], statistics.median(viewer[condition])
        print(row(f"view {condition}: wall (best round)", wall[condition] * 1e6))
        print(
            row(
                "  CPU of the calling thread (best round)",
                own * 1e6,
                note=f"{own / base:.3f}× closed",
            )
        )
        print(
            row(
                "  CPU of the view's server and client threads (median)",
                view * 1e6,
                note=f"{view / base:.3f} of a closed call",
            )
        )
        print(
            row("  the two together", (own + view) * 1e6, note=f"{(own + view) / base:.3f}× closed")
        )


def _latency() -> None:
    with Lab.virtual(0) as lab:
        lab.lh.pick_up_tips("tips_300ul", [0])
        server = open_view(lab)
        page = _Page(server.url)
        delays = []
        try:
            for n in range(few(20, 3)):
                well = f"plate_1:{'ABCDEFGH'[n % 8]}{n // 8 + 1}"
                lab.call(
                    "lh_aspirate",
                    {"items": [{"channel": 0, "well": "reservoir:A5", "volume": UL}]},
                )
                time.sleep(0.5)  # past the aspirate's read and the shortest time between reads
                lab.call("lh_dispense", {"items": [{"channel": 0, "well": well, "volume": UL}]})
                done = time.perf_counter()
                with page.states:
                    page.states.wait_for(
                        lambda well=well: well in page.state.get("colours", {}),  # type: ignore[operator]
                        timeout=10,
                    )
                    delays.append((page.at - done) * 1e3)
        finally:
            page.close()
            server.stop()
    print("a dispense's colour on the page (from the call's return to the state's arrival):")
    print(row("median", statistics.median(delays), "ms"))
    print(row("worst", max(delays), "ms", note=f"of {len(delays)} dispenses"))


def main() -> None:
    restore_sigint()
    _cost()
    _latency()


if __name__ == "__main__":
    main()
