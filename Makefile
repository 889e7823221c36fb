# Two commands do all set-up on a fresh machine:
#   make demo   -> create .venv, install the package (base dependencies only), run the offline MNIST demo
#   make test   -> create .venv, install the package with the dev extras, run the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Two install stamps: the demo needs only the base install; the dev extras (pytest,
# hypothesis, pyarrow, Ray: most of the install time) are installed on top for the tests.
BASE_STAMP := $(VENV)/.linbandit-installed-base
DEV_STAMP := $(VENV)/.linbandit-installed

.PHONY: install install-base demo test test-all bench clean

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

demo: $(BASE_STAMP)
	$(VENV)/bin/linbandit demo

test: $(DEV_STAMP)
	$(PY) -m pytest -q

test-all: $(DEV_STAMP)
	$(PY) -m pytest -q -m "slow or not slow"

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
