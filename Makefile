# skbqa — thin, self-documenting entry points. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Torch is pinned to the CPU build (pyproject); pip's cache makes re-installs quick.
PIP_INSTALL := $(BIN)/pip install --disable-pip-version-check -q

.DEFAULT_GOAL := help
.PHONY: help demo test test-slow lint bench-biomed bench-af clean

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

test-slow: $(VENV)/.installed-dev ## the slow suites (scale sanity, larger Milvus runs)
	$(BIN)/pytest -m slow

lint: $(VENV)/.installed-dev ## ruff lint + format check + mypy
	$(BIN)/ruff check services tests scripts bench loadtest
	$(BIN)/ruff format --check services tests scripts bench loadtest
	$(BIN)/mypy services/skbqa

bench-biomed: $(VENV)/.installed ## full biomed SKB: ingest, then bm25/vss/hybrid on the 400 dev questions (needs ../shared)
	$(BIN)/python bench/biomed.py --bundle ../shared/data/biomed-skb --index .skbqa/biomed --out bench/results

bench-af: $(VENV)/.installed ## af ablation (Table 5 rows), parser quality and per-step latency on the full biomed index
	$(BIN)/python bench/af_ablation.py --index .skbqa/biomed --qa ../shared/data/biomed-skb/qa-dev.jsonl \
		--out bench/results/af-ablation-biomed.json

clean: ## remove the venv and local indexes
	rm -rf $(VENV) .skbqa
