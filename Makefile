# Set-up and the jobs everyone runs. `make demo` and `make test` are the two commands in README.md.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PLUGINS := $(sort $(wildcard reference_plugins/*/pyproject.toml))
STAMP := $(VENV)/.installed

.PHONY: install demo test lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Reinstall only when a pyproject changes: editable installs pick up code edits by themselves.
$(STAMP): $(BIN)/python pyproject.toml $(PLUGINS)
	$(BIN)/python -m pip install -q -e '.[dev,rdt,conformance,template]' $(foreach p,$(PLUGINS),-e $(dir $(p)))
	# Type checkers cannot follow setuptools' editable import hook (two source roots: sdk/, conformance/); a
	# plain path entry lets mypy in a freshly baked plugin find rayaccel's types as an installed wheel gives them.
	$(BIN)/python -c "import site, sys; open(site.getsitepackages()[0] + '/rayaccel-sources.pth', 'w').write(sys.argv[1] + '/sdk\n' + sys.argv[1] + '/conformance\n')" "$(CURDIR)"
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/python -m demo

test: install
	$(BIN)/python -m pytest -q --durations=15

lint: install
	$(BIN)/ruff check sdk conformance tests reference_plugins benchmarks scripts demo
	$(BIN)/lint-imports
	$(BIN)/mypy

bench: install
	$(BIN)/python -m benchmarks.run $(BENCH_ARGS)  # BENCH_ARGS=--no-ray: without the figures that start Ray

clean:
	rm -rf $(VENV) build dist *.egg-info
