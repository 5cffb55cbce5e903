# The README's two commands. Both build a virtual environment from nothing but python3 on first
# use. PYTHON picks the interpreter; each one gets its own environment (.venv for the default).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the installed layout (labtools/drivers, labtools/simulators) as links, for tools that read files
LAYOUT := build/src

.PHONY: test demo bench lint typecheck schemas clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

demo: $(STAMP)
	$(BIN)/labtools demo --out out/demo

bench: $(STAMP)
	$(BIN)/python -m bench

lint: $(STAMP) typecheck
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/python tests/installed_layout.py $(LAYOUT) >/dev/null
	cd $(LAYOUT) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml -p labtools

schemas: $(STAMP)
	$(BIN)/labtools schemas

clean:
	rm -rf .venv .venv-* build out .pytest_cache .ruff_cache .mypy_cache
