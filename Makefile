# icetide — the commands a newcomer guesses. Every target creates and uses .venv in this folder.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# uv installs (into .venv and the tools' venvs) what pip would, resolving and downloading in parallel:
# the deployment tools' venvs take seconds instead of minutes, which make test's tools tier pays once.
UV := $(BIN)/uv
# Every module compiled to bytecode once, on its first import (Python, and pytest's assertion
# rewriting of the tests), in the venvs and in the project. PYTHONDONTWRITEBYTECODE is overridden on
# purpose (the caches are git-ignored): with it, every interpreter compiles again what it imports,
# each test worker, each `icetide` or tool subprocess of the tests, the collection of every test module.
# Compiling at install instead (uv's --compile-bytecode) would compile every installed module, most
# of which nothing imports, before the first test.
unexport PYTHONDONTWRITEBYTECODE
# A venv of its own for a tool whose pins clash with ours: $(call tool_venv,<dir>,<package>,<command>)
tool_venv = test -x $(1)/bin/$(3) || { $(UV) venv --quiet --allow-existing --seed --python $(PYTHON) $(1) && $(UV) pip install --quiet --python $(1)/bin/python $(2); }
JARS_DIR ?= $(HOME)/.cache/icetide/jars
# Worker processes of make test (pytest-xdist, whole test files per worker; each worker that runs a
# Spark test starts its own local[2] JVM, once; every PostgreSQL test goes to one worker, which starts
# the run's one server: tests/conftest.py). Two, for the two cores of this project's machine.
TEST_WORKERS ?= 2
# The tiers (tests/tiers.py): a test needing Spark, PostgreSQL, a deployment tool or the local stack's
# state machines carries that marker; the fast tier is every test without one.
FAST_TIER := not spark and not postgres and not tools and not stack
PYTEST := $(BIN)/python -m pytest --numprocesses $(TEST_WORKERS) --dist loadgroup
# Arguments for benchmarks/merge_cost.py, e.g. make bench BENCH_ARGS="--scale 0.01"
BENCH_ARGS ?=
export ICETIDE_JARS_DIR := $(JARS_DIR)
# What the background tier-setup of make test printed.
TIER_SETUP_LOG := .tier-setup.log

.PHONY: help venv jars test tier-setup test-fast test-spark test-postgres test-tools test-stack test-costs test-aws demo lint build clean bench bench-maintenance bench-hash
.DEFAULT_GOAL := help

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

$(UV):
	@command -v $(PYTHON) >/dev/null || { echo "icetide needs $(PYTHON) (the Python of AWS Glue 5.1)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet 'uv>=0.9'

$(STAMP): pyproject.toml $(UV)
	@echo "installing icetide and its dev dependencies into $(VENV) (pyspark builds a wheel once: ~1 min)"
	$(UV) pip install --quiet --python $(BIN)/python -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP) ## create .venv with icetide and its dev dependencies

jars: venv ## fetch the Iceberg runtime jars and the local file system's jar from Maven Central (cached outside git)
	$(BIN)/python -m icetide_local.jars

test: venv ## ruff and mypy, then the fast tier, then the slower ones: Spark, PostgreSQL, tools, stack (a failing step stops make test)
	@$(MAKE) --no-print-directory tier-setup > $(TIER_SETUP_LOG) 2>&1 & setup=$$!; \
	$(MAKE) --no-print-directory lint && $(PYTEST) -m "$(FAST_TIER)" && \
	{ wait $$setup || echo "the slower tiers' setup did not finish ($(TIER_SETUP_LOG)); their tests install what they need"; } && \
	$(MAKE) --no-print-directory jars && $(PYTEST) -m "not ($(FAST_TIER))"

# A head start, nothing more: each slower tier's own setup installs what is still missing and says
# what failed, so a step that fails here (no root for apt-get, no npx) is only logged.
tier-setup: venv $(UV) ## fetch what the slower tiers install (jars, the tools' venvs, PostgreSQL, asl-validator); make test runs it in the background while lint and the fast tier run
	-$(BIN)/python -m icetide_local.jars
	-@$(call tool_venv,.venv-sam,aws-sam-cli,sam)
	-@$(call tool_venv,.venv-checkov,checkov,checkov)
	-$(BIN)/python -c 'from icetide_local.postgres import ensure_binaries; ensure_binaries()'
	-command -v npx >/dev/null && npx --yes asl-validator@4 --version

test-fast: venv ## the fast tier alone (no Spark, PostgreSQL, deployment tools or local stack runs): the inner loop
	$(PYTEST) -m "$(FAST_TIER)" -q

test-spark: venv jars ## the Spark tier alone (its PostgreSQL tests too)
	$(PYTEST) -m spark

test-postgres: venv jars ## the PostgreSQL tier alone (one server, on one worker)
	$(PYTEST) -m postgres

test-tools: venv ## the deployment tools' tier alone (installs .venv-sam and .venv-checkov when missing)
	$(PYTEST) -m tools

test-stack: venv ## the local stack's tier alone: the state machines on the Step Functions stand-in
	$(PYTEST) -m stack

test-costs: venv jars ## the slower tiers, recording each test file's seconds in tests/scope_costs.json: the order make test's workers take them in (commit the file)
	$(PYTEST) -m "not ($(FAST_TIER))" --record-scope-costs

test-aws: venv ## the acceptance scenario against a deployed stack and its source (ICETIDE_STACK, ICETIDE_SOURCE_URL, AWS credentials; costs money: docs/acceptance.md)
	@$(BIN)/python -m icetide_acceptance --preflight
	@$(BIN)/python -c 'import pymysql, pyiceberg.catalog.glue' 2>/dev/null || { echo "installing the acceptance extra (pymysql, pyiceberg's Glue catalog) into $(VENV)"; $(UV) pip install --quiet --python $(BIN)/python -e '.[dev,acceptance]'; }
	@$(BIN)/python -m icetide_acceptance

demo: venv jars ## run the local end-to-end demo (SQLite -> DMS stand-in -> Step Functions -> Spark/Iceberg)
	$(BIN)/icetide local demo

lint: venv ## ruff (rules and formatting) and mypy over every package, the Glue entrypoint and the tests (make test runs it first)
	$(BIN)/ruff check contracts functions deploy glue_jobs cli local acceptance tests benchmarks
	$(BIN)/ruff format --check contracts functions deploy glue_jobs cli local acceptance tests benchmarks
	$(BIN)/mypy contracts/icetide_contracts functions/icetide functions/handlers deploy/glue_code_publisher deploy/run_bounds glue_jobs/icetide_glue cli/icetide_cli local/icetide_local acceptance/icetide_acceptance glue_jobs/bronze_to_silver.py glue_jobs/maintain_silver.py benchmarks/merge_cost.py benchmarks/one_process_floor.py benchmarks/table_maintenance.py benchmarks/values_hash.py benchmarks/driver_values_hash.py tests

bench: venv jars ## what a merge costs as the table grows: icetide, append, naive MERGE, reload, a bare MERGE, the floor, the floor in one process (BENCH_ARGS="--scale 0.01")
	@$(BIN)/python -c 'import matplotlib' 2>/dev/null || { echo "installing the bench extra (matplotlib) into $(VENV)"; $(UV) pip install --quiet --python $(BIN)/python -e '.[dev,bench]'; }
	$(BIN)/python benchmarks/merge_cost.py $(BENCH_ARGS)

bench-maintenance: venv jars ## 24 hourly merges into 2M rows, then maintenance, against a fresh table (BENCH_ARGS="--rows 20000")
	$(BIN)/python benchmarks/table_maintenance.py $(BENCH_ARGS)

bench-hash: venv jars ## a run's classification comparing the stored values hash against comparing values, narrow and wide tables (BENCH_ARGS="--rows 20000")
	$(BIN)/python benchmarks/values_hash.py $(BENCH_ARGS)

build: venv $(UV) ## sam build (aws-sam-cli lives in its own venv: it pins older boto3/pydantic)
	@$(call tool_venv,.venv-sam,aws-sam-cli,sam)
	.venv-sam/bin/sam build

clean: ## remove build output and local workspaces (keeps .venv and the jar cache)
	rm -rf .aws-sam .pytest_cache .ruff_cache .mypy_cache build *.egg-info $(TIER_SETUP_LOG)

.PHONY: lint-deploy
# The tools live in their own venvs: aws-sam-cli pins older boto3/pydantic, checkov pins its own set.
# sam validate --lint runs cfn-lint (the SAM CLI's own) over the template: no second cfn-lint run.
lint-deploy: venv $(UV) ## sam validate --lint (cfn-lint) and checkov on template.yaml (creates .venv-sam, .venv-checkov)
	@$(call tool_venv,.venv-sam,aws-sam-cli,sam)
	@$(call tool_venv,.venv-checkov,checkov,checkov)
	SAM_CLI_TELEMETRY=0 .venv-sam/bin/sam validate --lint --template template.yaml
	.venv-checkov/bin/checkov --file template.yaml --framework cloudformation --skip-download --quiet --compact
