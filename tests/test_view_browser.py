"""The live view in a real browser: Playwright for Python driving Debian's
chromium-headless-shell (``make browser`` installs it with apt where it runs as root; no
browser is downloaded). Without either, these tests skip, and fail under CI=true.

``LABTOOLS_SCREENSHOTS=docs/images`` keeps the screenshots the tests take there (the docs'
pictures); otherwise they go to a temporary folder.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from labtools import Lab
from labtools.view import open_replay, replay_journal, view

#: where Debian's chromium-headless-shell package puts the browser (dpkg -L), then PATH
BROWSERS = ("/usr/lib/chromium/chromium-headless-shell", "chromium-headless-shell")
UL = "microliter"


def _browser_path() -> str | None:
    given = os.environ.get("LABTOOLS_CHROMIUM")
    for candidate in (given, *BROWSERS) if given else BROWSERS:
        found = shutil.which(candidate) or (candidate if Path(candidate).is_file() else None)
        if found and os.access(found, os.X_OK):
            return found
    return None


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[dev]')")
    path = _browser_path()
    if path is None:
        _missing("no chromium-headless-shell (make browser installs it with apt as root)")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=path)
        yield instance
        instance.close()


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page whose every request off the machine fails, and is recorded."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.off_machine = []
    page.errors = []

    def route(handle: Any) -> None:
        if _loopback(handle.request.url):
            handle.continue_()
        else:
            page.off_machine.append(handle.request.url)
            handle.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    yield page
    context.close()


def _shot(page: Any, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("LABTOOLS_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=True)


def _fill(key: str) -> str:
    return f"document.querySelector('#deck [data-key=\"{key}\"]').getAttribute('fill')"


def _volume(value: float) -> dict[str, object]:
    return {"value": value, "unit": UL}


def test_the_page_draws_the_deck_of_the_virtual_lab(page):
    lab = Lab.virtual(0)
    with view(lab) as url:
        page.goto(url)
        page.wait_for_function("window.labview.state !== null && window.labview.wells.size > 0")
        # labware on their sites, tips, wells, the reader
        for name in ("plate_1", "plate_2", "plate_384", "reservoir", "tips_300ul", "reader"):
            assert page.locator(f'#deck rect[data-name="{name}"]').count() == 1
        assert page.locator("#deck [data-tip]").count() >= 4 * 96
        assert page.locator("#deck .tip.used").count() == 0
        assert page.locator('#deck [data-key^="plate_1:"]').count() == 96
        # the stocks: believed volumes, coloured from what they hold
        assert page.evaluate(_fill("reservoir:A1")) == "#ffffff"  # water
        assert page.get_attribute('#deck [data-key="reservoir:A5"]', "data-volume") == "15000"
        assert page.evaluate(_fill("plate_1:A1")) == "none"
        assert page.text_content("#clock") == "0:00:00.0"
    assert page.off_machine == [] and page.errors == []


def test_a_dispensed_dye_colours_its_well_within_a_second(page, tmp_path):
    lab = Lab.virtual(0)
    with view(lab) as url:
        page.goto(url)
        page.wait_for_function("window.labview.state !== null && window.labview.wells.size > 0")
        lab.call("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0, 1]})
        lab.call(
            "lh_aspirate",
            {
                "items": [
                    {"channel": 0, "well": "reservoir:A5", "volume": _volume(150)},
                    {"channel": 1, "well": "reservoir:A2", "volume": _volume(150)},
                ]
            },
        )
        result = lab.call(
            "lh_dispense",
            {
                "items": [
                    {"channel": 0, "well": "plate_1:A1", "volume": _volume(150)},
                    {"channel": 1, "well": "plate_1:B1", "volume": _volume(150)},
                ]
            },
        )
        assert result.ok
        # the page's own state, waited on (how fast: bench.view, not a wall-clock assertion)
        page.wait_for_function(f"{_fill('plate_1:A1')} !== 'none'", timeout=30_000)
        blue, yellow = page.evaluate(_fill("plate_1:A1")), page.evaluate(_fill("plate_1:B1"))
        assert blue == lab.shared["deck"].well_colours()["plate_1:A1"]
        r, g, b = (int(blue[i : i + 2], 16) for i in (1, 3, 5))
        assert b > r and b > 200  # brilliant blue
        r, g, b = (int(yellow[i : i + 2], 16) for i in (1, 3, 5))
        assert r > b + 100 and g > b  # tartrazine: yellow to orange
        assert page.get_attribute('#deck [data-key="plate_1:A1"]', "data-volume") == "150"
        assert page.locator("#deck .tip.used").count() == 2
        assert page.text_content("#clock") != "0:00:00.0"
        _shot(page, "live-view.png", tmp_path)
    assert page.off_machine == [] and page.errors == []


def test_a_refused_call_shows_in_the_log_with_its_hint(page):
    lab = Lab.virtual(0)
    with view(lab) as url:
        page.goto(url)
        page.wait_for_function("window.labview.state !== null")
        result = lab.call(
            "lh_dispense", {"items": [{"channel": 5, "well": "plate_1:B1", "volume": _volume(10)}]}
        )
        assert not result.ok
        refused = page.locator("#log li.refused")
        refused.wait_for(timeout=5000)
        text = refused.first.inner_text()
        assert "lh_dispense" in text and "precondition_failed" in text
        assert result.error is not None and f"hint: {result.error['hint']}" in text
        assert "field /items/0/channel" in text
    assert page.off_machine == [] and page.errors == []


def test_the_page_asks_nothing_off_the_machine_and_the_guard_would_see_it(page):
    lab = Lab.virtual(0)
    with view(lab) as url:
        page.goto(url)
        page.wait_for_function("window.labview.state !== null")
        assert page.off_machine == []
        # the guard works: a request off the machine is caught and fails
        page.evaluate("fetch('http://192.0.2.1/x').catch(() => null)")
        page.wait_for_function("true")
        deadline = time.monotonic() + 5
        while not page.off_machine and time.monotonic() < deadline:
            page.wait_for_timeout(50)
        assert page.off_machine == ["http://192.0.2.1/x"]


def test_a_reading_shows_as_a_heatmap_with_its_over_range_well_marked(page, tmp_path):
    lab = Lab.virtual(0)
    with view(lab) as url:
        page.goto(url)
        page.wait_for_function("window.labview.state !== null && window.labview.wells.size > 0")
        lab.lh.pick_up_tips("tips_300ul", [0])
        lab.lh.aspirate([{"channel": 0, "well": "reservoir:A4", "volume": "300 uL"}])
        lab.lh.dispense([{"channel": 0, "well": "plate_1:A1", "volume": "300 uL"}])
        lab.lh.move_plate("plate_1", "reader")
        wavelength = {"value": 500, "unit": "nanometer"}
        read = lab.call(
            "reader_read_absorbance", {"plate": "plate_1", "wavelength": wavelength, "wells": []}
        )
        assert read.ok and read.data is not None and read.data["over_range"] == ["A1"]
        marked = page.locator('#reading [data-reading-well="A1"]')
        marked.wait_for(timeout=30_000)
        assert marked.get_attribute("data-flag") == "over_range"
        assert page.locator("#reading [data-reading-well]").count() == 96
        assert page.locator('#reading [data-flag="over_range"]').count() == 1
        title = page.text_content("#reading-title") or ""
        assert "reader_read_absorbance, plate_1, 500 nm (OD)" in title and "1 over range" in title
        # every other well coloured on the scale, with its value
        b1 = page.locator('#reading [data-reading-well="B1"]')
        assert (
            b1.get_attribute("data-flag") == "" and b1.get_attribute("fill", timeout=1000) != "none"
        )
        # the plate is drawn in the reader on the deck
        box = page.locator('#deck rect[data-name="plate_1"] title').text_content()
        assert box == "plate_1 on reader"
        _shot(page, "live-view-reading.png", tmp_path)
    assert page.off_machine == [] and page.errors == []


#: what the page shows, to compare a step seen twice
_SHOWN = """() => ({
  step: document.getElementById("step").textContent,
  clock: document.getElementById("clock").textContent,
  wells: [...document.querySelectorAll("#deck [data-key]")].map(
    n => `${n.dataset.key} ${n.getAttribute("fill")} ${n.dataset.volume}`),
  tips_used: document.querySelectorAll("#deck .tip.used").length,
  plate_1: document.querySelector('#deck rect[data-name="plate_1"] title').textContent,
  log: document.getElementById("log").innerText,
  reading: document.getElementById("reading-title").textContent,
  read_wells: document.querySelectorAll("#reading [data-reading-well]").length,
})"""


def test_a_replayed_journal_steps_forward_and_back_to_the_same_states(page, tmp_path):
    path = tmp_path / "calls.jsonl"
    lab = Lab.virtual(0, journal=path)
    lab.lh.pick_up_tips("tips_300ul", [0])
    lab.lh.aspirate([{"channel": 0, "well": "reservoir:A5", "volume": "100 uL"}])
    lab.lh.dispense([{"channel": 0, "well": "plate_1:A1", "volume": "100 uL"}])
    lab.lh.move_plate("plate_1", "reader")
    wavelength = {"value": 630, "unit": "nanometer"}
    lab.call("reader_read_absorbance", {"plate": "plate_1", "wavelength": wavelength, "wells": []})
    lab.close()
    replay = replay_journal(path)
    server = open_replay(replay)

    def at(k: int) -> dict[str, Any]:
        page.wait_for_function(f"window.labview.step === {k}")
        return dict(page.evaluate(_SHOWN))

    try:
        page.goto(server.url)
        seen = {0: at(0)}
        assert seen[0]["step"] == "0 / 5" and seen[0]["clock"] == "0:00:00.0"
        assert page.evaluate(_fill("plate_1:A1")) == "none" and seen[0]["log"] == ""
        page.click("#forward")
        seen[1] = at(1)
        page.keyboard.press("ArrowRight")
        seen[2] = at(2)
        assert page.evaluate(_fill("plate_1:A1")) == "none" and seen[2]["tips_used"] == 1
        page.click("#forward")  # the dispense
        seen[3] = at(3)
        blue = page.evaluate(_fill("plate_1:A1"))
        assert blue == replay.state(3)["colours"]["plate_1:A1"]
        r, _, b = (int(blue[i : i + 2], 16) for i in (1, 3, 5))
        assert b > r and b > 200  # brilliant blue
        assert page.get_attribute('#deck [data-key="plate_1:A1"]', "data-volume") == "100"
        assert page.locator("#log li").count() == 3 and seen[3]["clock"] != "0:00:00.0"
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        seen[5] = at(5)  # the plate in the reader, read
        assert seen[5]["plate_1"] == "plate_1 on reader" and seen[5]["read_wells"] == 96
        _shot(page, "replay-view.png", tmp_path)
        # back: each step as it was seen on the way forward
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        assert at(3) == seen[3]
        page.click("#back")
        assert at(2) == seen[2] and page.evaluate(_fill("plate_1:A1")) == "none"
        page.locator("#scrub").fill("5")  # the slider
        assert at(5) == seen[5]
        page.locator("#scrub").fill("1")
        assert at(1) == seen[1] and seen[1]["reading"] == ""
        assert seen[1]["plate_1"].startswith("plate_1 on plate_carrier")
        page.keyboard.press("End")
        assert at(5) == seen[5]
        page.keyboard.press("Home")
        assert at(0) == seen[0]
    finally:
        server.stop()
    assert page.off_machine == [] and page.errors == []


def _dye_journal(path: Path, stock: str, extra: int = 0) -> Path:
    lab = Lab.virtual(0, journal=path)
    lab.lh.pick_up_tips("tips_300ul", [0])
    lab.lh.aspirate([{"channel": 0, "well": stock, "volume": "100 uL"}])
    lab.lh.dispense([{"channel": 0, "well": "plate_1:A1", "volume": "100 uL"}])
    for _ in range(extra):
        lab.call("lh_get_deck", {})
    lab.close()
    return path


def test_two_replays_side_by_side_step_together(page, tmp_path):
    blue = replay_journal(_dye_journal(tmp_path / "blue.jsonl", "reservoir:A5"))
    yellow = replay_journal(_dye_journal(tmp_path / "yellow.jsonl", "reservoir:A2", extra=1))
    server = open_replay([blue, yellow])
    try:
        page.goto(server.url)
        page.wait_for_function("window.labpair.k === 0")
        frames = [next(f for f in page.frames if f.url.endswith(f"/{n}/")) for n in (1, 2)]

        def at(k: int, *steps: int) -> list[str]:
            page.wait_for_function(f"window.labpair.k === {k}")
            for frame, step in zip(frames, steps, strict=True):
                frame.wait_for_function(f"window.labview.step === {step}")
            return [frame.evaluate(_fill("plate_1:A1")) for frame in frames]

        assert page.text_content("#step") == "0 / 4"
        assert at(0, 0, 0) == ["none", "none"]
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        assert at(3, 3, 3) == [
            blue.state(3)["colours"]["plate_1:A1"],
            yellow.state(3)["colours"]["plate_1:A1"],
        ]
        _shot(page, "replay-side-by-side.png", tmp_path)
        page.keyboard.press("End")  # the shorter run stays at its last step
        assert at(4, 3, 4)[0] == blue.state(3)["colours"]["plate_1:A1"]
        assert frames[1].text_content("#step") == "4 / 4"
        page.click("#back")
        page.click("#back")
        assert at(2, 2, 2) == ["none", "none"]
        assert frames[0].text_content("#status") == "blue.jsonl"
    finally:
        server.stop()
    assert page.off_machine == [] and page.errors == []


def test_a_replayed_call_with_another_result_is_marked(page, tmp_path):
    path = _dye_journal(tmp_path / "calls.jsonl", "reservoir:A5")
    events = [json.loads(line) for line in path.read_text().splitlines()]
    events[2]["data"] = {"recorded": "something else"}
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    server = open_replay(replay_journal(path))
    try:
        page.goto(server.url)
        page.wait_for_function("window.labview.step === 0")
        assert "1 call(s) gave another result" in (page.text_content("#status") or "")
        page.keyboard.press("End")
        page.wait_for_function("window.labview.step === 3")
        assert page.get_attribute('#log li[data-n="3"]', "class") == "ok diverged"
        assert page.get_attribute('#log li[data-n="2"]', "class") == "ok"
    finally:
        server.stop()
    assert page.off_machine == [] and page.errors == []
