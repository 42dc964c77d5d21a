"""docs/aws-facts.md read as data: its rows by id, and the names its rows spell in backticks.

A row is a line of one of the page's tables whose first cell is its id; the table's heading (``## DMS``)
is its service. Checks of the acceptance suite name the id of the row they verify, and the tests hold
both the code and the checks to the page (tests/unit/test_aws_facts.py, tests/acceptance/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FACTS_PATH = Path(__file__).resolve().parents[2] / "docs" / "aws-facts.md"
_ROW_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")
_BACKTICKED = re.compile(r"`([^`]+)`")


class FactsPageInvalid(ValueError):
    """docs/aws-facts.md has a row without a well-formed id, or two rows with one id."""


@dataclass(frozen=True)
class FactRow:
    """One row: its id, the service whose table holds it, and the row's text."""

    fact_id: str
    service: str
    text: str


def fact_rows(page: str) -> dict[str, FactRow]:
    """The page's rows by id (header and separator lines of each table are not rows)."""
    rows: dict[str, FactRow] = {}
    service = ""
    for line in page.splitlines():
        if line.startswith("## "):
            service = line.removeprefix("## ").strip()
            continue
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| id |"):
            continue
        fact_id = line.strip("|").split("|", 1)[0].strip()
        if not _ROW_ID.fullmatch(fact_id):
            raise FactsPageInvalid(f"a row of docs/aws-facts.md ({service}) has no id: {line[:80]}")
        if fact_id in rows:
            raise FactsPageInvalid(f"two rows of docs/aws-facts.md have the id {fact_id}")
        rows[fact_id] = FactRow(fact_id, service, line)
    return rows


def named_in_rows(page: str) -> set[str]:
    """Every name the page's rows spell in backticks (`CreateReplicationTask`, `glue:startJobRun.sync`)."""
    return {name for row in fact_rows(page).values() for name in _BACKTICKED.findall(row.text)}


def read_facts_page() -> str:
    """The text of docs/aws-facts.md."""
    return FACTS_PATH.read_text(encoding="utf-8")
