# Each target creates .venv and installs on a fresh machine; the stamp makes reruns quick.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: venv node awscli test lint scan audit-deps demo synth cdk-synth deploy-local bench mutation security-doc corpus clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@echo "Setting up $(VENV): hyperpod-perf and its dev tools (first run: a few minutes)..."
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check functions infra tests bench
	$(BIN)/ruff format --check functions infra tests bench
	@if command -v shellcheck >/dev/null; then shellcheck functions/hyperpod_perf/collect/collector.sh functions/hyperpod_perf/nccl/nccl-tests.sbatch; \
	 else echo "shellcheck not installed: skipped (apt-get install shellcheck)"; fi

test: venv lint cdk-synth deploy-local scan
	$(BIN)/python -m pytest tests

# Scanners (docs/SECURITY.md lists each accepted finding and its reason): bandit on the code,
# checkov on the templates cdk-synth wrote (it runs cdk-synth first when there are none),
# shellcheck on the scripts. Every accepted finding is acknowledged where it is: `# nosec <id>`
# on its line, `Metadata.checkov.skip` on its resource (infra/constructs); none is skipped
# wholesale. checkov lives in its own venv: its pins conflict with the dev tools'.
CHECKOV := build/checkov
$(CHECKOV)/bin/checkov:
	$(PYTHON) -m venv $(CHECKOV)
	$(CHECKOV)/bin/pip install --quiet 'checkov==3.3.30'
TEMPLATES := cdk.out/cli-no-credentials.template.json cdk.out/cli-account-region.template.json
scan: venv $(CHECKOV)/bin/checkov
	$(BIN)/bandit -c pyproject.toml -r functions infra -q
	@for t in $(TEMPLATES); do test -f "$$t" || { $(MAKE) cdk-synth; break; }; done
	$(CHECKOV)/bin/checkov --framework cloudformation --skip-download --quiet --compact $(addprefix -f ,$(TEMPLATES))
	@if command -v shellcheck >/dev/null; then shellcheck functions/hyperpod_perf/collect/collector.sh functions/hyperpod_perf/nccl/nccl-tests.sbatch && echo "shellcheck: clean"; \
	 else echo "shellcheck not installed: skipped (apt-get install shellcheck)"; fi

# The dependency audit needs the advisory services (PyPI's JSON API per release, OSV, the npm
# registry's audit endpoint), which these machines cannot reach: run it where they can (see
# docs/SECURITY.md). It audits exactly what .venv has installed and package-lock.json pins.
PIP_AUDIT := build/pip-audit
$(PIP_AUDIT)/bin/pip-audit:
	$(PYTHON) -m venv $(PIP_AUDIT)
	$(PIP_AUDIT)/bin/pip install --quiet 'pip-audit==2.10.1'
audit-deps: venv $(PIP_AUDIT)/bin/pip-audit
	$(BIN)/pip freeze --exclude-editable > build/requirements-audit.txt
	$(PIP_AUDIT)/bin/pip-audit --strict --requirement build/requirements-audit.txt --no-deps --disable-pip
	npm audit --omit=dev --audit-level=low

# The demo's metrics tier needs Debian's prometheus (+ promtool): installed here as CI does when this
# runs as root with apt-get; otherwise the demo runs without the tier and says so.
demo: venv
	@if ! command -v promtool >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  echo "Installing Debian's prometheus for the demo's metrics tier..."; \
	  (apt-get install -y -qq prometheus >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq prometheus >/dev/null 2>&1)) \
	  || echo "prometheus not installed: the demo runs without its metrics tier"; fi
	$(BIN)/hyperpod-perf demo --out demo-out

# The CloudFormation template (with cdk-nag) into cdk.out/, with the pinned CLI and the configuration
# passed as DEPLOY.md passes it: `make synth CONFIG=hyperpod-perf.json` checks yours before a deploy.
CONFIG ?= infra/example-context.json
synth: venv node
	$(CDK) synth --no-notices --quiet -o cdk.out -c hyperpod-perf:config=$(CONFIG)
	@ls cdk.out/*.template.json

# The pinned AWS CDK CLI (package.json/package-lock.json) in node_modules/: no global install.
NODE_STAMP := node_modules/.installed
CDK := node_modules/.bin/cdk
node: $(NODE_STAMP)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	touch $(NODE_STAMP)

# The real CDK CLI synthesizes offline (no version check, no notices, no telemetry, no instance
# metadata look-up), as DEPLOY.md's `npx cdk deploy` would: once with no credentials and no
# configuration (the empty stack, allowed on purpose with the documented flag), once with an account
# and region set (as the CLI sets them with credentials) and the example configuration, passed the
# one way DEPLOY.md documents (`-c hyperpod-perf:config=FILE`). cdk-nag fails the synth on any
# unacknowledged finding; cfn-lint must report no error (exit-code bit 2) on either template.
# W3005 (CDK's DependsOn beside a GetAtt on a role's default policy) is CDK's own pattern and is
# not reported.
CDK_OFFLINE := env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
	-u CDK_DEFAULT_ACCOUNT -u CDK_DEFAULT_REGION AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
	CDK_DISABLE_VERSION_CHECK=1 CDK_DISABLE_CLI_TELEMETRY=true
CDK_SYNTH := synth --no-notices --no-version-reporting --ci --quiet
cdk-synth: venv node
	$(CDK_OFFLINE) $(CDK) $(CDK_SYNTH) -o cdk.out/cli -c hyperpod-perf:allowEmpty=true
	cp cdk.out/cli/HyperPodPerf.template.json cdk.out/cli-no-credentials.template.json
	$(CDK_OFFLINE) CDK_DEFAULT_ACCOUNT=111122223333 CDK_DEFAULT_REGION=us-west-2 AWS_REGION=us-west-2 \
	  $(CDK) $(CDK_SYNTH) -o cdk.out/cli -c hyperpod-perf:config=infra/example-context.json
	cp cdk.out/cli/HyperPodPerf.template.json cdk.out/cli-account-region.template.json
	grep -q '"ml-cluster-p5"' cdk.out/cli-account-region.template.json
	! grep -l -e 111122223333 -e us-west-2 cdk.out/cli-*.template.json
	@for t in cdk.out/cli-no-credentials.template.json cdk.out/cli-account-region.template.json; do \
	  $(BIN)/cfn-lint --ignore-checks W3005 -- "$$t"; rc=$$?; \
	  if [ $$((rc & 2)) -ne 0 ]; then echo "cfn-lint: errors in $$t"; exit 1; fi; \
	  echo "cfn-lint: no error in $$t (exit $$rc)"; done

# The aws command DEPLOY.md documents, pinned, in its own venv (awscli pins its own botocore).
AWSCLI := build/awscli
$(AWSCLI)/bin/aws:
	$(PYTHON) -m venv $(AWSCLI)
	$(AWSCLI)/bin/pip install --quiet 'awscli==1.45.11'
awscli: $(AWSCLI)/bin/aws

# The real CDK CLI bootstraps and deploys the stack (the assembly cdk-synth made with the example
# configuration) into a moto server on 127.0.0.1, then DEPLOY.md's start-execution command, as
# written, diagnoses a seeded simulated cluster with the handlers run on the deployed environment.
deploy-local: venv node awscli cdk-synth
	PATH="$(CURDIR)/$(AWSCLI)/bin:$$PATH" $(BIN)/python -W ignore::UserWarning \
	  -m infra.deploy_local --cdk $(CDK) --app cdk.out/cli

bench: venv
	$(BIN)/python -m bench

# Mutation testing (mutmut 3) of rules/, nccl/analysis/ and nccl/baselines.py against their unit tests;
# slow (2-8 mutants/s on 2 cores, ~8,000 mutants), never run by CI. Each run updates its modules' rows
# in bench/mutation.json and bench/MUTATION.md. `make mutation MODULES="rules/host.py rules/fsx.py"`.
mutation: venv
	$(BIN)/python -m bench.mutation $(MODULES)

# The table of bad inputs and faults in docs/SECURITY.md, from a run of the hardening suites.
security-doc: venv
	rm -f build/outcomes.json
	HPD_OUTCOMES_FILE=build/outcomes.json $(BIN)/python -m pytest -q tests/unit/fuzz tests/statemachine \
	  tests/unit/report/test_escaping_media.py tests/integration/test_cli_bounded_reads.py
	$(BIN)/python tests/render_outcomes.py build/outcomes.json docs/SECURITY.md

# docs/CORPUS.md: the real-world corpus (tests/corpus/) judged by the engine, with the score.
corpus: venv
	$(BIN)/python tests/corpus/corpus_report.py

clean:
	rm -rf $(VENV) node_modules cdk.out demo-out build .pytest_cache .ruff_cache
