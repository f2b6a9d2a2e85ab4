# ClearFlow: `make up` starts the local stack, `make test` runs every test. Both install what is missing.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Maven projects built at install (the local schema registry): a change to one rebuilds it.
JAVA_PROJECTS := $(shell find localstack/schema-registry -type f -not -path '*/target/*' | sort)
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml localstack/jars.py $(JAVA_PROJECTS) | sha1sum | cut -c1-12)

.PHONY: up test lint demo-data install system-deps clean

install: $(STAMP)

$(STAMP): pyproject.toml localstack/jars.py $(JAVA_PROJECTS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[local,dev]'
	@bash localstack/system-deps.sh build
	$(PY) -m localstack jars
	@rm -f $(VENV)/.installed-* && touch $@

system-deps:
	@bash localstack/system-deps.sh $(PURPOSE)

up: PURPOSE = up
# The start banner counts from here (install and system checks included), not from the first service.
up: export CLEARFLOW_UP_STARTED_AT := $(shell date +%s.%N)
up: install system-deps
	@$(PY) -m localstack up

test: PURPOSE = test
test: install system-deps lint
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(PY) -m ruff check .

demo-data: install
	@$(PY) -m localstack demo-data $(ARGS)

clean:
	rm -rf $(VENV) test-artifacts
