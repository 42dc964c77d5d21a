"""Fixtures of the unit tests: the AWS blog post's control item, plain and as DynamoDB typed JSON."""

import json
from pathlib import Path
from typing import Any

import pytest

CONTROL_ITEMS = Path(__file__).resolve().parent.parent / "fixtures" / "control_items"


@pytest.fixture
def blog_item_path() -> Path:
    return CONTROL_ITEMS / "blog_mlb_data.json"


@pytest.fixture
def blog_lte_item_path() -> Path:
    """The blog's item as printed: `lte` with both startvalue and endvalue (DMS reads only one)."""
    return CONTROL_ITEMS / "blog_lte_item.json"


@pytest.fixture
def blog_typed_item_path() -> Path:
    return CONTROL_ITEMS / "blog_mlb_data.typed.json"


@pytest.fixture
def blog_item(blog_item_path: Path) -> dict[str, Any]:
    """The control item of the AWS blog post: every value a string, `ouputs3Prefix` misspelt."""
    item: dict[str, Any] = json.loads(blog_item_path.read_text())
    return item
