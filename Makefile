# The README's two commands. Both build a virtual environment from nothing but python3 on first
# use. PYTHON picks the interpreter; each one gets its own environment (.venv for the default).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the installed layout (labtools/drivers, labtools/simulators) as links, for tools that read files
LAYOUT := build/src
# MCP clients this project did not write (tests/test_mcp_interop.py), pinned, installed with npm
INTEROP := tests/interop
CLIENTS := $(INTEROP)/node_modules/.installed

.PHONY: test demo bench bench-quick lint typecheck schemas clean clients browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: $(STAMP) clients browser
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

# Without npm the interop tests are skipped (and fail under CI=true).
clients:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(CLIENTS); \
	else echo "no npm on this machine: the MCP interop tests will be skipped"; fi

# The browser tests' Chromium (tests/test_view_browser.py): Debian's chromium-headless-shell,
# installed with apt where this runs as root (as CI does); Playwright drives it, and downloads
# no browser. Elsewhere the browser tests are skipped (and fail under CI=true).
CHROMIUM := /usr/lib/chromium/chromium-headless-shell
browser:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell; \
	else echo "no chromium-headless-shell and no apt as root: the browser tests will be skipped"; fi

$(CLIENTS): $(INTEROP)/package.json $(INTEROP)/package-lock.json
	cd $(INTEROP) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

demo: $(STAMP)
	$(BIN)/labtools demo --out out/demo

bench: $(STAMP)
	$(BIN)/python -m bench

# A few rounds of each benchmark (CI runs it): shows that every one still runs; its figures are
# not to be read.
bench-quick: $(STAMP)
	$(BIN)/python -m bench --quick

lint: $(STAMP) typecheck
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/python tests/installed_layout.py $(LAYOUT) >/dev/null
	cd $(LAYOUT) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml -p labtools

schemas: $(STAMP)
	$(BIN)/labtools schemas

clean:
	rm -rf .venv .venv-* build out .pytest_cache .ruff_cache .mypy_cache $(INTEROP)/node_modules

# A wheel of this clone, for environments that cannot see it (labtools-sdk is on no package
# index): dist/labtools_sdk-<version>-py3-none-any.whl; install it with its extras as
# pip install 'dist/labtools_sdk-0.1.0-py3-none-any.whl[ray]'. Stale build output goes first.
.PHONY: wheel
wheel: $(STAMP)
	rm -rf build/lib build/bdist.* dist/labtools_sdk-*.whl
	$(BIN)/python -m pip wheel --no-deps --quiet --wheel-dir dist .
