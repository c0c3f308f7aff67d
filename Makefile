# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# setuptools' editable build warns on every install (a banner about folders named like the
# package); it is about layouts rpp does not have, so it is kept off a first run's screen.
INSTALL := PYTHONWARNINGS=ignore::UserWarning $(BIN)/python -m pip install --quiet
TSTAMP := $(VENV)/.installed-test

DIST   ?= dist

.PHONY: demo test bench fixtures clean wheel

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml setup.py rpp_cli/core/_kernel.c Makefile | $(BIN)/python
	$(INSTALL) -e '.[plot]'
	touch $@

$(TSTAMP): pyproject.toml setup.py rpp_cli/core/_kernel.c Makefile | $(BIN)/python
	$(INSTALL) -e '.[test]'
	touch $@ $(STAMP)

# The demo opens with tables a person reads at a glance; the trec lines are one command away.
demo: $(STAMP)
	$(BIN)/rpp eval --format matrix fixtures/demo/qrels fixtures/demo/runs/*
	@echo "# the same results as trec_eval-style lines, for scripts: rpp eval fixtures/demo/qrels fixtures/demo/runs/*"

test: $(TSTAMP)
	$(BIN)/python -m pytest -q

# A binary wheel (the compiled kernel inside) for machines without a compiler:
# pip install $(DIST)/rpp_cli-*.whl
wheel: | $(BIN)/python
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir $(DIST) .

fixtures: | $(BIN)/python
	$(BIN)/python fixtures/make_collection.py --out fixtures/demo

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis

bench: $(STAMP)
	$(BIN)/python bench/run.py
