"""The contracts package (contracts/icetide_contracts): importable on Glue as it is, and the one
definition of what the state machine and the sample events carry."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from icetide_contracts.json_fields import ContractViolation
from icetide_contracts.run_plan import RunPlan

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = REPO / "contracts"
MODULES = sorted(CONTRACTS.glob("icetide_contracts/*.py"))
EVENTS = {path.name: json.loads(path.read_text(encoding="utf-8")) for path in REPO.glob("events/*.json")}
# The sample events that carry a plan (events/, used by `sam local invoke -e`).
# Run plans only: record_maintenance's sample carries a maintenance plan (icetide.maintenance.plan).
PLANS = {
    name: event["plan"]
    for name, event in sorted(EVENTS.items())
    if isinstance(event.get("plan"), dict) and "reportUri" not in event["plan"]
}


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.stem)
def test_a_contract_module_imports_the_standard_library_only(path: Path) -> None:
    # Glue 5.1 gives the job no pydantic to rely on, and the Lambdas' layer holds nothing else.
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.partition(".")[0])

    assert imported - set(sys.stdlib_module_names) - {"icetide_contracts"} == set()


def test_the_package_imports_with_nothing_installed() -> None:
    # -I -S: no site-packages, no user site, no PYTHONPATH; only the folder Glue and the layer provide.
    modules = ", ".join(f"icetide_contracts.{path.stem}" for path in MODULES if path.stem != "__init__")
    program = f"import sys; sys.path.insert(0, {str(CONTRACTS)!r}); import {modules}"
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", program],
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0, result.stderr


def test_every_plan_field_the_state_machine_reads_is_a_key_of_the_plan() -> None:
    asl = (REPO / "statemachine" / "table_run.asl.json").read_text(encoding="utf-8")
    read = set(re.findall(r"\$\.lock\.plan\.(\w+)", asl))

    assert read
    assert read <= set(RunPlan.from_json(PLANS["commit_watermark.json"]).to_json())


def test_the_sample_events_carry_plans() -> None:
    assert len(PLANS) >= 4


@pytest.mark.parametrize("event", sorted(PLANS))
def test_a_sample_plan_reads_back_to_the_same_json(event: str) -> None:
    plan = PLANS[event]

    assert list(RunPlan.from_json(plan).to_json().items()) == list(plan.items())


def test_a_plan_that_breaks_the_contract_names_every_attribute() -> None:
    changes = {"loadMode": "upsert", "previousWatermark": True, "bronzeUri": "bronze/"}
    broken = {**PLANS["commit_watermark.json"], **changes}
    del broken["runId"]

    with pytest.raises(ContractViolation) as caught:
        RunPlan.from_json(broken)

    assert caught.value.problems == (
        ("runId", "required attribute is missing"),
        ("loadMode", "Input should be 'merge' or 'append'"),
        ("previousWatermark", "must be a finite number, a string or null, got True"),
        ("bronzeUri", "String should match pattern '^s3://[^/]+/.+'"),
    )
    assert str(caught.value).startswith("run plan is invalid: runId: required attribute is missing; ")
