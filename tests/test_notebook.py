"""A lab and a plate reading in a notebook: run in a real Jupyter kernel (nbclient, ipykernel),
a cell ending in a lab shows its decks as SVG with each well in the colour of what it holds,
and a reading's result shows a heatmap with over-range and out-of-accurate-range wells marked;
rendered in Chromium, the deck's wells are drawn in those colours."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import nbclient
import nbformat
from test_view_browser import browser  # noqa: F401  (the browser tests' Chromium fixture)

from labtools import Lab
from labtools.view.notebook import lab_html, reading_html

SETUP = """
from labtools import Lab
lab = Lab.virtual(seed=0)
dye = {"value": 200, "unit": "microliter"}
nothing = {"value": 0, "unit": "microliter"}
lab.call("lh_transfer", {"transfers": [{"source": "reservoir:A2", "destination": "plate_1:A1",
         "volume": dye}], "tip_rack": "tips_300ul", "tips": "new", "channels": [],
         "mix_cycles": 0, "mix_volume": nothing})
"""
READ = """
lab.call("lh_move_plate", {"plate": "plate_1", "destination": "reader"})
lab.call("reader_read_absorbance", {"plate": "plate_1", "wells": [],
         "wavelength": {"value": 500, "unit": "nanometer"}})
"""


class _Tags(HTMLParser):
    """Every start tag's attributes, by tag."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _attrs(markup: str, key: str) -> dict[str, dict[str, str | None]]:
    parser = _Tags()
    parser.feed(markup)
    return {str(a[key]): a for _, a in parser.tags if a.get(key)}


def _lab_as_in_the_notebook() -> Lab:
    """The lab the notebook's first cell builds, built here the same way."""
    namespace: dict[str, Lab] = {}
    exec(SETUP, namespace)
    return namespace["lab"]


def test_a_lab_and_a_reading_show_as_html_in_a_jupyter_kernel() -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(SETUP + "lab"), nbformat.v4.new_code_cell(READ)]
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3").execute()
    shown = [
        output["data"]
        for cell in notebook.cells
        for output in cell.outputs
        if output.get("output_type") == "execute_result"
    ]
    assert len(shown) == 2 and all("text/html" in data for data in shown)
    with _lab_as_in_the_notebook() as lab:
        colours = lab.shared["deck"].well_colours()
        wells = _attrs(shown[0]["text/html"], "data-well")
        assert wells["plate_1:A1"]["fill"] == colours["plate_1:A1"] != "#ffffff"
        assert wells["plate_1:B1"]["fill"] == "none"  # empty
        assert wells["reservoir:A2"]["fill"] == colours["reservoir:A2"]
        assert "200 µL believed" in shown[0]["text/html"]
        lab.call("lh_move_plate", {"plate": "plate_1", "destination": "reader"})
        reading = lab.call(
            "reader_read_absorbance",
            {"plate": "plate_1", "wells": [], "wavelength": {"value": 500, "unit": "nanometer"}},
        )
    cells = _attrs(shown[1]["text/html"], "data-well")
    assert len(cells) == 96
    assert reading.data["values"]["A1"] > 2.0  # a neat dye reads above the accurate range
    assert cells["A1"]["data-flag"] == "high" and cells["B1"].get("data-flag") == "low"
    assert shown[1]["text/html"] == reading._repr_html_()


def test_a_reading_marks_wells_with_no_number_and_other_results_have_no_html() -> None:
    data = {
        "plate": "plate_1",
        "wavelength": {"value": 450, "unit": "nanometer"},
        "unit": "OD",
        "values": {"A1": 0.5, "A2": 2.4, "B1": 0.05},
        "saturated": ["B2"],
        "over_range": ["C1"],
    }
    markup = reading_html(data)
    assert markup is not None
    cells = _attrs(markup, "data-well")
    assert {w: cells[w].get("data-flag") for w in cells if cells[w].get("data-flag")} == {
        "A2": "high",
        "B1": "low",
        "B2": "unread",
        "C1": "unread",
    }
    assert set(cells) == {"A1", "A2", "B1", "B2", "C1", "C2"}  # rows A-C, columns 1-2
    assert re.search(r">2\.4▲<", markup) and markup.count(">OR<") == 2
    assert reading_html({"temperature": 25.0, "setpoint": None, "unit": "degree_Celsius"}) is None


def test_the_lab_renders_in_a_browser_with_its_wells_coloured(browser) -> None:  # noqa: F811
    with _lab_as_in_the_notebook() as lab:
        markup, colours = lab_html(lab), lab.shared["deck"].well_colours()
    page = browser.new_page()
    try:
        page.set_content(markup)
        fill = page.locator("[data-well='plate_1:A1']").evaluate(
            "node => getComputedStyle(node).fill"
        )
        box = page.locator("svg.labtools-deck").bounding_box()
    finally:
        page.close()
    red, green, blue = (int(colours["plate_1:A1"][i : i + 2], 16) for i in (1, 3, 5))
    assert fill == f"rgb({red}, {green}, {blue})"
    assert box is not None and box["width"] > 300
