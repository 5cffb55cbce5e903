"""A live view reads what wells hold from its own thread while the lab works; the world runs a
container's pending reactions when it is looked at, so the view's look may be the one that runs
them. Whichever thread looks first, each step runs once: an episode watched by a thread
peeking at every container, as fast as it can, gives the very results of one nobody watches."""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import numpy as np

from labtools.session import Session
from labtools.session.evaluate import run_episode

TASK = "enzyme_kinetics"


def _episode(peeking: bool) -> tuple[list[Any], dict[str, Any]]:
    with Session(TASK, secret="threads") as session:
        world = session.lab.shared["world"]
        stop = threading.Event()

        def peek() -> None:
            while not stop.is_set():
                for key in list(world._contents):
                    world.peek(key)

        peeker = threading.Thread(target=peek, daemon=True)
        switch = sys.getswitchinterval()
        if peeking:
            sys.setswitchinterval(1e-6)  # hand the interpreter over as often as it can
            peeker.start()
        try:
            reward = run_episode(session, "expert", 3)
        finally:
            stop.set()
            if peeking:
                peeker.join()
            sys.setswitchinterval(switch)
        results = [
            (e["tool"], e.get("data"), e.get("error"))
            for e in session.lab.journal.events()
            if "tool" in e
        ]
        truth = json.dumps(world.hidden_truth(), sort_keys=True, default=_plain)
        return results, {"reward": reward.total, "truth": truth}


def _plain(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else repr(value)


def test_a_thread_peeking_at_every_well_changes_no_result() -> None:
    assert _episode(peeking=True) == _episode(peeking=False)
