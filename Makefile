# Every target that CI runs is here; .ci/run calls them unchanged.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NATIVE := $(VENV)/.native
# The compiled groups that setup.py builds with mypyc (each package's _native_modules.txt:
# the engine core's and the server's), listed by setup.py itself (its one reader of the
# lists): a changed source rebuilds them before check, test, bench and run.
NATIVE_LISTS := pineapple/_native_modules.txt server/_native_modules.txt
NATIVE_SRC := $(shell $(PY) setup.py --native-sources)
# What the pure-Python pass of `make test` runs again with PINEAPPLE_PURE_PYTHON=1: the
# tests of the compiled modules' packages (the engine core's: engine, operators and the
# conformance fixtures; the server's: its http and metrics wings) and the end-to-end
# answers of a served engine. The rest of tests/server drives the lifecycle (reloads,
# workers, history), whose code is the same Python on either core: it runs once.
PURE_TESTS := tests/engine tests/operators tests/conformance tests/server/http \
	tests/server/metrics tests/server/test_e2e.py tests/server/test_both_modes.py \
	tests/server/test_native.py
PACKAGES := pineapple resources server dsl codegen
CONFIG ?= configs/demo.json
ADDR ?= 127.0.0.1:8080

.PHONY: install check lint fmt typecheck codegen test unit stress bench docs docs-serve run clean

# The venv and the dependencies; the compiled core is built once, by the $(NATIVE) rule.
$(STAMP): pyproject.toml setup.py pineapple/resource/_cref.c pineapple/operators/_orders.c \
		resources/_untrack.c
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	PINEAPPLE_NO_COMPILE=1 $(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(NATIVE): $(STAMP) setup.py pineapple/_native_list.py $(NATIVE_LISTS) $(NATIVE_SRC)
	$(BIN)/pip install --quiet --no-deps -e .
	@for m in pineapple/_native_manifest.json server/_native_manifest.json; do test -f $$m || \
		echo "make: $$m missing: mypyc did not build that group, it runs as Python" \
			"($(BIN)/pip install -v --no-deps -e . shows why)" >&2; done
	touch $(NATIVE)

install: $(NATIVE)

check: $(NATIVE)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy $(PACKAGES) benchmarks tests
	$(BIN)/python -m codegen --check

fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

codegen: $(STAMP)
	$(BIN)/python -m codegen

# The whole suite on the compiled engine core, then PURE_TESTS again on the
# pure-Python fallback. Four test processes on two
# cores (pytest-xdist): most tests wait on the servers they start; tests that change
# a global setting take a lock for it (xdist_group marks do not group on
# pytest 9.2: pytest-xdist issue 1386).
XDIST := -n 4
test: $(NATIVE)
	PINE_FIXTURES_DIR=$${PINE_FIXTURES_DIR-../shared/fixtures/pineapple} $(BIN)/python -m pytest $(XDIST)
	PINEAPPLE_PURE_PYTHON=1 PINE_FIXTURES_DIR=$${PINE_FIXTURES_DIR-../shared/fixtures/pineapple} \
		$(BIN)/python -m pytest -q $(XDIST) $(PURE_TESTS)

# A developer's loop: the tests that start no other process and need no service (about
# half the suite, in well under a minute); a test that starts one anyway fails, named.
unit: $(NATIVE)
	PINEAPPLE_UNIT=1 PINE_FIXTURES_DIR=$${PINE_FIXTURES_DIR-../shared/fixtures/pineapple} \
		$(BIN)/python -m pytest -q $(XDIST) -m "not process and not e2e and not stress and not mysql and not postgres and not redis"

stress: $(NATIVE)
	$(BIN)/python -m pytest -m stress

bench: $(NATIVE)
	$(BIN)/python -m benchmarks

# The docs site (mkdocs-material) into build/site/; strict: any warning fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The same site served on loopback, rebuilt on every edit: open http://$(DOCS_ADDR)/
# (the search loads its index over HTTP, which a page opened from file:// cannot).
DOCS_ADDR ?= 127.0.0.1:8000
docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict --dev-addr $(DOCS_ADDR)

run: $(NATIVE)
	@test -f $(CONFIG) || { echo "make run: $(CONFIG) not found; try: make run CONFIG=path/to/config.json"; exit 2; }
	@echo "Serving $(CONFIG) on http://$(ADDR): edit the file to hot-reload it; Ctrl-C stops."
	@echo "Once it listens it prints a curl line to try; also: curl -s http://$(ADDR)/resources"
	$(BIN)/pineapple serve $(CONFIG) --addr $(ADDR)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
