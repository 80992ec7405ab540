# Set-up and the jobs everyone runs. `make demo` and `make test` are the two commands in README.md.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PLUGINS := $(sort $(wildcard reference_plugins/*/pyproject.toml))
STAMP := $(VENV)/.installed

.PHONY: install system-deps demo test lint typecheck bench mutation docs clean

# Debian packages of the real tools that check what rayaccel writes (slurmd parses gres.conf, promtool and
# prometheus read the metrics, chromium renders the pictures). Installed when we are root with apt (CI is);
# elsewhere the tests that need one skip, naming it. The stamp names the list, so a new package reinstalls.
DEBIAN_PACKAGES := slurmd prometheus chromium
SYSDEPS_STAMP := $(VENV)/.debian-$(shell echo $(DEBIAN_PACKAGES) | md5sum | cut -c1-12)

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

$(SYSDEPS_STAMP): | $(BIN)/python
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$(DEBIAN_PACKAGES) >/dev/null && touch $@; \
	else echo "not root with apt-get: tests needing $(DEBIAN_PACKAGES) will skip"; fi

system-deps: $(SYSDEPS_STAMP)

demo: install
	$(BIN)/python -m demo

# The suite starts hundreds of Python processes (CLI commands, Ray workers, plugin workers, pytest in baked
# projects): each reads the project's modules compiled, and pytest its assertion-rewritten test modules, even
# where the environment turns writing them off (PYTHONDONTWRITEBYTECODE=1 in many container images).
test: export PYTHONDONTWRITEBYTECODE =
# The parallel run ends, naming what each worker runs, after this many seconds (tests/suite_watchdog.py).
test: export RAYACCEL_SUITE_BUDGET_S = 1800
ALONE_FILES = $(shell grep -rl --include='test_*.py' 'mark\.alone' tests reference_plugins)
test: install system-deps
	# Three workers, a test file per worker at a time (a file's tests share their Ray cluster): the run is
	# CPU-bound (Ray's processes, the checks' own work: 4% idle); 17.0 min on a 2-core machine at b77d83e, 15.7 at
	# d47a591 in the same hour, 13.8 at d47a591 two hours before (the machine's own spread; budget: 12).
	# Files go out in collection order, the longest first (tests/conftest.py LONGEST_FILES), not by test count.
	# A worker that dies (a crash inside Ray's C++ threads) ends the run at once, naming the test it was running:
	# replaced, it left xdist's file scheduler waiting for work no worker was given until the budget ran out.
	$(BIN)/python -m pytest -q --durations=15 -n 3 --dist loadfile --no-loadscope-reorder --max-worker-restart=0 \
		-m "not alone"
	# Then the tests marked alone, collected from the files that use the marker (not the whole suite again).
	$(BIN)/python -m pytest -q -m alone $(ALONE_FILES)

lint: install
	$(BIN)/ruff check sdk conformance tests reference_plugins benchmarks scripts demo
	$(BIN)/lint-imports
	$(BIN)/mypy

# Measured as installed code runs: modules read compiled (see test above).
bench: export PYTHONDONTWRITEBYTECODE =
bench: install
	$(BIN)/python -m benchmarks.run $(BENCH_ARGS)  # BENCH_ARGS=--no-ray: without the figures that start Ray

# The conformance suite measured by cosmic-ray (kill rate per module, survivors, build/mutation/results.json):
# slow, so never part of `make test`. Every module of the five reference plugins and of a fresh template bake,
# largest gap first, within MUTATION_BUDGET seconds (each mutant by 3 x its plugin's baseline, the CPUs less one
# at once, niced); MUTATION_ARGS="--sample 20" a seeded sample of each module, "rayaccel_tpu.health bake:health"
# some modules, "--own-tests" each survivor tested by its plugin's own cheap tests too (counted apart),
# "--workers 4 --timeout 90" and the rest: scripts/mutation.py --help.
MUTATION_BUDGET ?= 3300
mutation: install
	$(BIN)/python -c "import cosmic_ray" 2>/dev/null || $(BIN)/python -m pip install -q -e '.[mutation]'
	timeout $$(( $(MUTATION_BUDGET) + 600 )) nice -n 5 $(BIN)/python scripts/mutation.py --budget $(MUTATION_BUDGET) \
		$(MUTATION_ARGS)

# The generated docs: the hook reference and the architecture picture, drawn from the import contracts
# (tests/docs/test_docs.py and tests/docs/test_architecture_map.py fail while either is stale).
docs: install
	$(BIN)/python docs/gen_hooks.py > docs/hooks.md
	$(BIN)/python docs/gen_architecture.py

clean:
	rm -rf $(VENV) build dist *.egg-info
