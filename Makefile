# Two commands do all set-up on a fresh machine:
#   make demo   -> create .venv, install, run the offline MNIST demo
#   make test   -> create .venv, install, run the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.linbandit-installed

.PHONY: install demo test test-all bench clean

install: $(STAMP)

$(STAMP): pyproject.toml scripts/install-torch.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	bash scripts/install-torch.sh $(PY)
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/linbandit demo

test: $(STAMP)
	$(PY) -m pytest -q

test-all: $(STAMP)
	$(PY) -m pytest -q -m "slow or not slow"

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
