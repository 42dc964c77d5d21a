"""Running the deployment tools (make lint-deploy, sam, the SAM transform) from the tests."""

from __future__ import annotations

import os
import subprocess

from deploy.template_model import REPO_ROOT

SAM = REPO_ROOT / ".venv-sam" / "bin" / "sam"
TOOL_ENVIRONMENT = {**os.environ, "SAM_CLI_TELEMETRY": "0"}


def run_tool(*command: str, timeout: int = 1200) -> subprocess.CompletedProcess[str]:
    """Run a deployment tool from the repository root; its output is kept for the assertion message."""
    return subprocess.run(
        list(command),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=TOOL_ENVIRONMENT,
        check=False,
        timeout=timeout,
    )


def output(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr
