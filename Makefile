# Two commands do all set-up on a fresh machine:
#   make demo   -> create .venv, install the package (base dependencies only), run the offline MNIST demo
#   make test   -> create .venv, install the package with the dev extras, run the default test suite
# and more:
#   make docs   -> build the documentation site into site/ (offline; any warning is an error)
#   make test-slow -> the slow tests only (paper-scale runs, process kills, Ray, checked doc tables)
#   make test-all  -> both suites in one run
#   make lint   -> ruff check and ruff format --check (the rules are in pyproject.toml)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Two install stamps: the demo needs only the base install; the dev extras (pytest,
# hypothesis, pyarrow, Ray: most of the install time) are installed on top for the tests.
BASE_STAMP := $(VENV)/.linbandit-installed-base
DEV_STAMP := $(VENV)/.linbandit-installed
DOCS_STAMP := $(VENV)/.linbandit-installed-docs

.PHONY: install install-base demo test test-slow test-all docs lint bench clean

install: $(DEV_STAMP)

install-base: $(BASE_STAMP)

$(BASE_STAMP): pyproject.toml scripts/install-torch.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	bash scripts/install-torch.sh $(PY)
	$(PY) -m pip install -q -e .
	touch $(BASE_STAMP)

$(DEV_STAMP): $(BASE_STAMP)
	$(PY) -m pip install -q -e ".[dev]"
	touch $(DEV_STAMP)

$(DOCS_STAMP): $(BASE_STAMP)
	$(PY) -m pip install -q -e ".[docs]"
	touch $(DOCS_STAMP)

demo: $(BASE_STAMP)
	$(VENV)/bin/linbandit demo

test: $(DEV_STAMP)
	$(PY) -m pytest -q

test-slow: $(DEV_STAMP)
	$(PY) -m pytest -q -m slow

test-all: $(DEV_STAMP)
	$(PY) -m pytest -q -m "slow or not slow"

# NO_MKDOCS_2_WARNING: no end-of-life banner from MkDocs Material in the build log
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) runs site .pytest_cache .hypothesis
