"""ReleaseLock: free the table's lock, if and only if this run holds it.

Input: ``{"targetTableName", "runId"}``. Output: ``{"released": bool}``; False when the lock was
not this run's (already released, broken by a later run, or never taken), so repeating is safe.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters.control_table import ControlTable
from icetide.observability import logger, observed
from icetide.run.handler_inputs import RunInput, parse_input
from icetide.settings import load_settings


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(RunInput, event)
    write = ControlTable(settings.control_table_name).release_lock(run.target_table_name, run.run_id)
    if not write.written:
        holder = (write.item or {}).get("lockHolder")
        logger.info("lock not released: this run does not hold it", extra={"lockHolder": holder})
    return {"released": write.written}
