"""Fixtures of the deployment tests: the parsed template, read once per session."""

from __future__ import annotations

from typing import Any

import pytest

from deploy import template_model


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return template_model.template()
