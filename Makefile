# Two entry points that do all set-up on a fresh machine (Python 3.10+, git):
#   make run    -- the main job: migrate a fresh copy of a pristine release (RELEASE=4.45.2) and verify it
#   make test   -- mypy (make typecheck), then the test suite (downloads and caches the real releases the
#                  integration tests use)
# and: make scan (classify only), make typecheck, make goldens, make rules-doc (docs/rules.md from rules/), make bench
PYTHON ?= python3
VENV ?= .venv
RELEASE ?= 4.45.2
JOBS ?= 2
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run scan typecheck test goldens rules-doc bench clean

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
	MYPYPATH=codemod/verify $(BIN)/mypy -p tiny -m scenarios -m testers -m usage -m worker

test: $(STAMP) typecheck
	$(BIN)/python -m pytest -n auto

goldens: $(STAMP)
	$(BIN)/python -m tests.goldens

rules-doc: $(STAMP)
	$(BIN)/python -m codemod.rules.doc

bench: $(STAMP)
	$(BIN)/python bench/scan.py

clean:
	rm -rf $(VENV) .pytest_cache
