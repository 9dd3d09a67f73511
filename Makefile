# Each target creates .venv and installs on a fresh machine; the stamp makes reruns quick.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: venv test lint demo synth bench mutation security-doc clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check functions infra tests bench
	$(BIN)/ruff format --check functions infra tests bench
	@if command -v shellcheck >/dev/null; then shellcheck functions/hyperpod_perf/collect/collector.sh; \
	 else echo "shellcheck not installed: skipped (apt-get install shellcheck)"; fi

test: venv lint
	$(BIN)/python -m pytest tests

demo: venv
	$(BIN)/hyperpod-perf demo --out demo-out

# The CloudFormation template (with cdk-nag) into cdk.out/, as `npx aws-cdk@2 synth` would.
synth: venv
	CDK_OUTDIR=cdk.out $(BIN)/python infra/app.py
	@ls cdk.out/*.template.json

bench: venv
	$(BIN)/python -m bench

# Mutation testing (mutmut 3) of rules/ and nccl/analysis.py against their unit tests; slow (about
# 1 mutant/s on 2 cores), never run by CI. `make mutation MODULES="rules/host.py rules/fsx.py"` for a subset.
mutation: venv
	$(BIN)/python -m bench.mutation $(MODULES)

# The table of bad inputs and faults in docs/SECURITY.md, from a run of the hardening suites.
security-doc: venv
	rm -f build/outcomes.json
	HPD_OUTCOMES_FILE=build/outcomes.json $(BIN)/python -m pytest -q tests/unit/fuzz tests/statemachine
	$(BIN)/python tests/render_outcomes.py build/outcomes.json docs/SECURITY.md

clean:
	rm -rf $(VENV) cdk.out demo-out build .pytest_cache .ruff_cache
