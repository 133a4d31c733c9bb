# Two entry points that do all set-up on a fresh machine (Python 3.10+, git):
#   make run    -- the main job: migrate a fresh copy of a pristine release (RELEASE=4.45.2) and verify it
#   make test   -- mypy (make typecheck), ruff (make lint), then the test suite (downloads and caches the real
#                  releases the integration tests use)
# and: make scan (classify only), make typecheck, make lint, make goldens, make rules-doc (docs/rules.md from rules/),
# make bench, make dist-check (build the sdist and wheel, check them, smoke-run the wheel in a fresh venv)
PYTHON ?= python3
VENV ?= .venv
RELEASE ?= 4.45.2
DIST ?= dist
JOBS ?= 2
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run scan typecheck lint test dist-check goldens rules-doc bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/codemod apply --verify --hooks --release $(RELEASE) --jobs $(JOBS)

scan: $(STAMP)
	$(BIN)/codemod scan --release $(RELEASE)

# mypy --strict (pyproject.toml's [tool.mypy]) over codemod/ and rules/, then over the modules the
# verification workers import by path, under the names they have there (tiny, scenarios, ...)
typecheck: $(STAMP)
	$(BIN)/mypy
	MYPYPATH=codemod/verify $(BIN)/mypy -p tiny -m scenarios -m decoding_scenarios -m input_scenarios \
		-m recording -m testers -m usage -m worker

# the code as `ruff format` lays it out, and ruff's lints (pyproject.toml's [tool.ruff])
lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

test: $(STAMP) typecheck lint
	$(BIN)/python -m pytest -n auto

# What a user installs: the sdist and the wheel built (no setuptools deprecation warning), their metadata
# checked, and the wheel installed into a fresh venv, where `codemod` runs and diffs a model file.
dist-check: $(STAMP)
	rm -rf $(DIST) build
	mkdir -p $(DIST)
	$(BIN)/python -m build --outdir $(DIST) . > $(DIST)/build.log 2>&1 || (cat $(DIST)/build.log; exit 1)
	! grep -i "deprecat" $(DIST)/build.log
	$(BIN)/twine check --strict $(DIST)/*.whl $(DIST)/*.tar.gz
	$(PYTHON) -m venv $(DIST)/venv
	$(DIST)/venv/bin/python -m pip install --quiet $(DIST)/*.whl
	$(BIN)/python .ci/smoke.py $(DIST)/venv

goldens: $(STAMP)
	$(BIN)/python -m tests.goldens

rules-doc: $(STAMP)
	$(BIN)/python -m codemod.rules.doc

bench: $(STAMP)
	$(BIN)/python bench/scan.py

clean:
	rm -rf $(VENV) .pytest_cache $(DIST) build
