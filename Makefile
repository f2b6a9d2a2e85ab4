# ClearFlow: `make up` starts the local stack, `make test` runs every test. Both install what is missing.
# `make test-fast` runs the tests that need no service (marked `fast`), in seconds; `make test` runs them first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Java built at install (the local schema registry, the Protobuf decoder, the engine's spark_jobs/jvm): a
# change to one rebuilds it.
JAVA_PROJECTS := $(shell find localstack/schema-registry spark_jobs/protobuf-jvm spark_jobs/jvm -type f -not -path '*/target/*' | sort)
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml localstack/jars.py spark_jobs/cds_build.py $(JAVA_PROJECTS) | sha1sum | cut -c1-12)

.PHONY: up down status test test-fast lint demo-data install system-deps clean

install: $(STAMP)

$(STAMP): pyproject.toml localstack/jars.py spark_jobs/cds_build.py $(JAVA_PROJECTS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# Before pip: the gssapi package builds against MIT Kerberos's headers (libkrb5-dev).
	@bash localstack/system-deps.sh build
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[local,dev]'
	$(PY) -m localstack jars
	@# Spark's classes archived for the jobs' JVMs (AppCDS, spark_jobs.cds_build): about a second off each start.
	$(PY) -m spark_jobs.cds_build
	@rm -f $(VENV)/.installed-* && touch $@

system-deps:
	@bash localstack/system-deps.sh $(PURPOSE)

up: PURPOSE = up
# The start banner counts from here (install and system checks included), not from the first service.
up: export CLEARFLOW_UP_STARTED_AT := $(shell date +%s.%N)
# Ctrl-C stops the stack and its pipeline jobs (they resume at the next start). DETACH=1 runs it in the
# background: `make status` tells what runs, `make down` stops it.
# system-deps first: what cannot be installed is named within seconds, before pip installs anything.
up: system-deps install
	@$(PY) -m localstack up $(if $(DETACH),--detach)

down status:
	@test -x $(PY) || { echo "clearflow: not installed here yet; \`make up\` installs and starts it"; exit 0; } \
		&& $(PY) -m localstack $@

# pytest exits 5 when a tier has no test among PYTEST_ARGS (e.g. a service-tier folder): not a failure here.
# .ci/timed prints each tier's wall time in minutes (the CI budget: docs/dev/map.md) and keeps its exit code.
test-fast: install
	bash .ci/timed "fast tier" $(PY) -m pytest -m fast $(PYTEST_ARGS) || [ $$? -eq 5 ]

test: PURPOSE = test
test: system-deps install lint
	bash .ci/timed "fast tier" $(PY) -m pytest -m fast $(PYTEST_ARGS) || [ $$? -eq 5 ]
	bash .ci/service-tiers $(PY) $(PYTEST_ARGS)

lint: install
	bash .ci/timed lint $(PY) -m ruff check .

demo-data: install
	@$(PY) -m localstack demo-data $(ARGS)

clean:
	rm -rf $(VENV) test-artifacts
