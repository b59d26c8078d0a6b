# skbqa — thin, self-documenting entry points. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Torch is pinned to the CPU build (pyproject); pip's cache makes re-installs quick.
PIP_INSTALL := $(BIN)/pip install --disable-pip-version-check -q

.DEFAULT_GOAL := help
.PHONY: help demo test test-slow lint protos helm-check loadtest stack-up stack-down bench-biomed bench-af \
	bench-distributed fuzz images clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-14s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(PIP_INSTALL) -e .
	@touch $@

# Tests start the real components (Kafka-protocol broker, Triton, Ray, Milvus Lite, Prometheus): every extra, and
# the Debian prometheus binary when it is missing (scripts/install_system_deps.sh).
$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP_INSTALL) -e '.[all]'
	scripts/install_system_deps.sh
	@touch $@

demo: $(VENV)/.installed ## install, ingest the bundled biomedical sample, answer its questions and show why
	$(BIN)/skbqa demo --bundle data/biomed-sample --index .skbqa/biomed-sample

test: $(VENV)/.installed-dev ## install with test extras and run the default test suite
	$(BIN)/pytest

test-slow: $(VENV)/.installed-dev ## the slow suites (scale sanity, larger Milvus runs, the images built and run)
	$(BIN)/pytest -m slow

images: $(VENV)/.installed-dev ## build every image (docker/Dockerfile) on a local Debian base; sizes and times to bench/results/images.json
	scripts/install_image_tools.sh
	$(BIN)/python scripts/images.py build

lint: $(VENV)/.installed-dev ## ruff lint + format check + mypy
	$(BIN)/ruff check services tests scripts bench loadtest
	$(BIN)/ruff format --check services tests scripts bench loadtest
	$(BIN)/mypy services/skbqa

protos: $(VENV)/.installed-dev ## regenerate services/skbqa/v1 from protos/ (a test fails when they differ)
	scripts/gen_protos.sh

helm-check: $(VENV)/.installed-dev ## render the chart offline, validate it, and fail if k8s/ drifted from it
	$(BIN)/python scripts/render_k8s.py --check
	$(BIN)/pytest -q tests/deploy/test_chart.py

INDEX ?= .skbqa/biomed-sample
LOADTEST_USERS ?= 4
LOADTEST_RUN_TIME ?= 20s
loadtest: $(VENV)/.installed-dev ## bounded headless Locust run against an embedded server on the sample index
	@test -f $(INDEX)/manifest.json || $(BIN)/skbqa ingest data/biomed-sample --index $(INDEX)
	$(BIN)/python loadtest/record.py embedded --index $(INDEX) --users $(LOADTEST_USERS) \
		--run-time $(LOADTEST_RUN_TIME) --out loadtest/results/embedded.json

stack-up: $(VENV)/.installed-dev ## the local distributed stack (broker, Triton, one process per service, Ray, Prometheus)
	@test -f $(INDEX)/manifest.json || $(BIN)/skbqa ingest data/biomed-sample --index $(INDEX)
	$(BIN)/skbqa stack up --index $(INDEX) --prometheus

stack-down: $(VENV)/.installed-dev ## stop exactly what stack-up started
	$(BIN)/skbqa stack down

bench-distributed: $(VENV)/.installed-dev ## Ask latency embedded vs distributed, per-stage Prometheus figures, replicas
	@test -f $(INDEX)/manifest.json || $(BIN)/skbqa ingest data/biomed-sample --index $(INDEX)
	$(BIN)/python bench/distributed.py --index $(INDEX) --qa data/biomed-sample/qa.jsonl \
		--out bench/results/distributed.json

fuzz: $(VENV)/.installed-dev ## 1M generated inputs through the Cypher and encoder parsers (about 40 min)
	$(BIN)/python bench/fuzz.py --out bench/results/fuzz.json

bench-biomed: $(VENV)/.installed ## full biomed SKB: ingest, then bm25/vss/hybrid on the 400 dev questions (needs ../shared)
	$(BIN)/python bench/biomed.py --bundle ../shared/data/biomed-skb --index .skbqa/biomed --out bench/results

bench-af: $(VENV)/.installed ## af ablation (Table 5 rows), parser quality and per-step latency on the full biomed index
	$(BIN)/python bench/af_ablation.py --index .skbqa/biomed --qa ../shared/data/biomed-skb/qa-dev.jsonl \
		--out bench/results/af-ablation-biomed.json

clean: ## remove the venv and local indexes
	rm -rf $(VENV) .skbqa
