"""The run manifest: what the Glue job did, as `commit_watermark` reads it.

The Glue job writes it next to the run's bronze files (contracts: "Run manifest"); the watermark is
advanced from `newWatermark` only, so a manifest that does not hold together is refused outright.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from icetide.control.problems import problem_lines
from icetide.control.values import as_decimal
from icetide.errors import ManifestInvalid


def _whole_number(value: object) -> object:
    # JSON true/1.5/"3" are not row counts; pydantic's lax mode would take them.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be a whole number, got {value!r}")
    return value


def _optional_whole_number(value: object) -> object:
    return None if value is None else _whole_number(value)


def _watermark_value(value: object) -> object:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or as_decimal(value) is None:
        raise ValueError(f"must be a finite number, a string or null, got {value!r}")
    return value


RowCount = Annotated[int, BeforeValidator(_whole_number), Field(ge=0)]


class RunManifest(BaseModel):
    """One run's manifest; field aliases are the JSON keys."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)

    run_id: str = Field(alias="runId", min_length=1)
    target_table: str = Field(alias="targetTable", min_length=1)
    rows_read: RowCount = Field(alias="rowsRead")
    rows_inserted: RowCount = Field(alias="rowsInserted")
    rows_updated: RowCount = Field(alias="rowsUpdated")
    rows_deleted: RowCount = Field(alias="rowsDeleted")
    rows_unchanged: RowCount = Field(0, alias="rowsUnchanged")
    watermark_column: str | None = Field(None, alias="watermarkColumn")
    new_watermark: Annotated[int | float | str | None, BeforeValidator(_watermark_value)] = Field(
        None, alias="newWatermark"
    )
    snapshot_id: Annotated[int | None, BeforeValidator(_optional_whole_number)] = Field(
        None, alias="snapshotId"
    )
    already_committed: bool = Field(False, alias="alreadyCommitted", strict=True)
    schema_changes: list[str] = Field(default_factory=list, alias="schemaChanges")

    @classmethod
    def parse_json(cls, text: str | bytes) -> RunManifest:
        """Parse manifest JSON; ManifestInvalid says what is wrong (not JSON, or which field and why)."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ManifestInvalid(f"run manifest is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ManifestInvalid(f"run manifest must be a JSON object, got a JSON {type(data).__name__}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ManifestInvalid(f"run manifest is invalid: {'; '.join(problem_lines(exc))}") from None
