"""Fixtures of the deployment tests: the parsed template, read once per session, and the tools' runs."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from deploy import template_model
from deploy.deploy_tools import output, run_tool
from once_per_run import once_per_run


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return template_model.template()


@pytest.fixture(scope="session")
def lint_deploy(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> subprocess.CompletedProcess[str]:
    """`make lint-deploy`, once per test run (it also creates .venv-sam and .venv-checkov)."""

    def lint() -> dict[str, Any]:
        # -o: use .venv as it is; the test suite already runs inside it.
        done = run_tool("make", "--no-print-directory", "-o", ".venv/.installed", "lint-deploy")
        return {
            "args": done.args,
            "returncode": done.returncode,
            "stdout": done.stdout,
            "stderr": done.stderr,
        }

    return subprocess.CompletedProcess(**once_per_run(tmp_path_factory, worker_id, "lint-deploy", lint))


@pytest.fixture(scope="session")
def transformed(
    lint_deploy: subprocess.CompletedProcess[str], tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> dict[str, Any]:
    """template.yaml after the AWS::Serverless transform (tests/deploy/sam_transform.py, in .venv-sam)."""

    def transform() -> dict[str, Any]:
        result = run_tool(
            str(template_model.REPO_ROOT / ".venv-sam" / "bin" / "python"),
            "tests/deploy/sam_transform.py",
            timeout=300,
        )
        assert result.returncode == 0, output(result)
        resources: dict[str, Any] = json.loads(result.stdout)["Resources"]
        return resources

    resources: dict[str, Any] = once_per_run(tmp_path_factory, worker_id, "sam-transform", transform)
    return resources
