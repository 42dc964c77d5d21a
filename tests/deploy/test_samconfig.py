"""samconfig.toml: a default and a prod environment that deploy template.yaml as it is."""

from __future__ import annotations

import shlex
import tomllib
from typing import Any

import pytest

from deploy.template_model import REPO_ROOT, template

ENVIRONMENTS = ("default", "prod")


def _samconfig() -> dict[str, Any]:
    return tomllib.loads((REPO_ROOT / "samconfig.toml").read_text(encoding="utf-8"))


def _overrides(environment: str) -> dict[str, str]:
    """parameter_overrides (`Name="value" ...`) of one environment, as a dict."""
    text = _samconfig()[environment]["deploy"]["parameters"]["parameter_overrides"]
    return dict(pair.split("=", 1) for pair in shlex.split(text))


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_environment_deploys_with_the_capabilities_the_template_needs(environment: str) -> None:
    deploy = _samconfig()[environment]["deploy"]["parameters"]

    # Named IAM roles (dms-vpc-role, dms-cloudwatch-logs-role) need CAPABILITY_NAMED_IAM.
    assert set(deploy["capabilities"].split()) == {"CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"}
    assert deploy["resolve_s3"] is True


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_environment_overrides_only_parameters_the_template_has(environment: str) -> None:
    assert set(_overrides(environment)) - set(template()["Parameters"]) == set()


def test_environments_are_separate_stacks() -> None:
    config = _samconfig()
    stacks = {config[env]["global"]["parameters"]["stack_name"] for env in ENVIRONMENTS}

    assert stacks == {"icetide", "icetide-prod"}


@pytest.mark.parametrize("parameter", ["ScheduleState", "MaintenanceScheduleState"])
def test_only_prod_runs_on_the_schedule_by_default(parameter: str) -> None:
    schedule = {env: _overrides(env)[parameter] for env in ENVIRONMENTS}

    assert schedule == {"default": "DISABLED", "prod": "ENABLED"}


def test_prod_checks_the_source_servers_certificate() -> None:
    # verify-full needs DatabaseCertificateArn, which `--guided` asks for (the template refuses
    # the deploy without it: test_template_operations.py).
    assert _overrides("prod")["DatabaseSslMode"] == "verify-full"
    assert "DatabaseCertificateArn" in (REPO_ROOT / "samconfig.toml").read_text(encoding="utf-8")
