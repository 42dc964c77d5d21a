"""The deployment tools run clean: `make lint-deploy` (sam validate --lint, checkov) and `sam build`.

The tools live in their own virtual environments (.venv-sam, .venv-checkov), which `make
lint-deploy` creates when they are missing, so these tests need no preparation on a fresh clone,
only PyPI (as `make test` itself does). `sam build` runs without a container: it needs the
runtime's Python (python3.11) on PATH.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from deploy.deploy_tools import SAM, output, run_tool
from deploy.template_model import (
    REPO_ROOT,
    SERVERLESS_FUNCTION,
    custom_resource_functions,
    function_property,
    icetide_functions,
    resources_of_type,
)

pytestmark = pytest.mark.tools

# pydantic-core's compiled module for Linux on Graviton: present only in an arm64 build.
ARM64_PYDANTIC_CORE = "pydantic_core/_pydantic_core.cpython-311-aarch64-linux-gnu.so"


def test_lint_deploy_finds_nothing(lint_deploy: subprocess.CompletedProcess[str]) -> None:
    assert lint_deploy.returncode == 0, output(lint_deploy)
    assert "template.yaml is a valid SAM Template" in output(lint_deploy)
    assert "Failed checks: 0" in output(lint_deploy)


def test_sam_build_builds_every_function_and_the_glue_layer_for_arm64(
    lint_deploy: subprocess.CompletedProcess[str], tmp_path: Path
) -> None:
    assert SAM.exists(), "make lint-deploy creates .venv-sam"
    build_dir = tmp_path / "build"

    result = run_tool(
        str(SAM), "build", "--parallel", "--template-file", "template.yaml", "--build-dir", str(build_dir)
    )

    assert result.returncode == 0, output(result)
    for name in resources_of_type(SERVERLESS_FUNCTION):
        module = function_property(name, "Handler").rpartition(".")[0]
        assert (build_dir / name / f"{module.replace('.', '/')}.py").is_file(), name
    for name in icetide_functions():
        assert (build_dir / name / ARM64_PYDANTIC_CORE).is_file(), f"{name} is not built for arm64"
    for name in custom_resource_functions():
        assert (build_dir / name / "crhelper" / "__init__.py").is_file(), f"{name} lacks its requirements"
    layer = build_dir / "GlueCodeLayer" / "python"
    assert (layer / "bronze_to_silver.py").is_file()
    assert (layer / "maintain_silver.py").is_file()
    assert (layer / "icetide_glue" / "__init__.py").is_file()
    contracts = build_dir / "ContractsLayer" / "python" / "icetide_contracts"
    assert {path.name for path in contracts.glob("*.py")} == {
        path.name for path in (REPO_ROOT / "contracts" / "icetide_contracts").glob("*.py")
    }


def test_sam_reads_each_samconfig_environment(lint_deploy: subprocess.CompletedProcess[str]) -> None:
    # `make lint-deploy` runs `sam validate` in the default environment (SAM's own default, read
    # from samconfig.toml); this run is in prod. Prod's validate section turns --lint on: SAM parsed
    # the file and linted the template.
    result = run_tool(str(SAM), "validate", "--config-env", "prod", timeout=300)

    assert result.returncode == 0, output(result)
    assert "template.yaml is a valid SAM Template" in output(result)
    # The default environment validates as prod does, so its `sam validate` lints as this run did.
    environments = tomllib.loads((REPO_ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    assert (
        environments["default"]["validate"]
        == environments["prod"]["validate"]
        == {"parameters": {"lint": True}}
    )


def test_the_serverless_transform_accepts_the_template(transformed: dict[str, Any]) -> None:
    # `sam validate --lint` does not translate: an event property SAM does not know passes it.
    assert set(resources_of_type(SERVERLESS_FUNCTION)) <= set(transformed)


def test_only_its_queue_invokes_start_on_new_files(transformed: dict[str, Any]) -> None:
    # The events rule puts object events into the queue; Lambda's event source mapping reads them
    # (with the function's own role: no resource permission). Nothing may invoke it directly.
    permissions = [
        resource["Properties"]
        for resource in transformed.values()
        if resource["Type"] == "AWS::Lambda::Permission"
        and resource["Properties"]["FunctionName"] == {"Ref": "StartOnNewFilesFunction"}
    ]
    mappings = [
        resource["Properties"]
        for resource in transformed.values()
        if resource["Type"] == "AWS::Lambda::EventSourceMapping"
        and resource["Properties"]["FunctionName"] == {"Ref": "StartOnNewFilesFunction"}
    ]
    rule_targets = [
        target["Arn"]
        for resource in transformed.values()
        if resource["Type"] == "AWS::Events::Rule"
        for target in resource["Properties"]["Targets"]
    ]

    assert permissions == []
    (mapping,) = mappings
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["ContinuousFilesQueue", "Arn"]}
    assert {"Fn::GetAtt": ["StartOnNewFilesFunction", "Arn"]} not in rule_targets
    assert rule_targets.count({"Fn::GetAtt": ["ContinuousFilesQueue", "Arn"]}) == 1


def test_both_task_creating_functions_attach_the_shared_dms_policy(transformed: dict[str, Any]) -> None:
    for function in ("CreateReplicationTaskFunction", "EnsureContinuousTaskFunction"):
        role = transformed[f"{function}Role"]["Properties"]

        assert {"Ref": "DmsTaskCreationPolicy"} in role["ManagedPolicyArns"], function
