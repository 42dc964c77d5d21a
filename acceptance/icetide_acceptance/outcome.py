"""What a check found: passed, failed, or not applicable here, and the aws-facts row it verifies."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Status(Enum):
    PASSED = "passed"
    FAILED = "failed"
    # The row cannot be checked with this source or target (a slot on MySQL; silver in the dry run).
    NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True)
class Outcome:
    """One check's result; ``fact_id`` is the id of the docs/aws-facts.md row it verifies."""

    check: str
    fact_id: str
    status: Status
    detail: str

    def line(self) -> str:
        """One line for the report: status, check, row, what was seen."""
        return f"{self.status.value:>14}  {self.check} [aws-facts: {self.fact_id}]  {self.detail}"


def passed(check: str, fact_id: str, detail: str) -> Outcome:
    return Outcome(check, fact_id, Status.PASSED, detail)


def failed(check: str, fact_id: str, detail: str) -> Outcome:
    return Outcome(check, fact_id, Status.FAILED, detail)


def not_applicable(check: str, fact_id: str, detail: str) -> Outcome:
    return Outcome(check, fact_id, Status.NOT_APPLICABLE, detail)
