"""StartVerifyRun: starts a verify run of one table, and can start nothing else.

Input: ``{"targetTableName": T}`` (any other key is refused). Output: ``{"targetTableName",
"runId", "executionArn"}``: the table-run execution named ``verify_run_id(T, now)``
(``<T>-verify-<YYYYMMDDTHHMMSSZ>``, icetide.run.verify) with input ``{"targetTableName": T}``, which
`icetide verify TABLE --stack` then waits for. The run id is made here, never taken from the caller:
an operator allowed to invoke this function (and not ``states:StartExecution`` on the machine) can
verify tables and start no merge, reload or maintenance run.

Raises InvalidHandlerInput for another input, VerifyRunNotStarted when Step Functions has seen the
name (a verify of the table started within the same second that ended, or with other input).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide import clock
from icetide.adapters import stepfunctions
from icetide.errors import IcetideError
from icetide.observability import MetricUnit, logger, metrics, observed
from icetide.run.handler_inputs import parse_input
from icetide.run.verify import VerifyRequest, verify_run_id
from icetide.settings import load_settings


class VerifyRunNotStarted(IcetideError):
    """Step Functions refused the verify run's execution name; start it again a second later."""


@observed(correlation_id_path=None)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    state_machine_arn = settings.require("state_machine_arn")
    request = parse_input(VerifyRequest, event)
    run_id = verify_run_id(request.target_table_name, clock.utc_now())
    try:
        execution_arn = stepfunctions.start_named_execution(
            state_machine_arn, run_id, request.execution_input()
        )
    except stepfunctions.ExecutionNameTaken:
        raise VerifyRunNotStarted(
            f"verify run {run_id} exists already: start the verify again in a second"
        ) from None
    logger.info("verify run started", extra={"runId": run_id, "executionArn": execution_arn})
    metrics.add_metric(name="VerifyRunsStarted", unit=MetricUnit.Count, value=1)
    return {"targetTableName": request.target_table_name, "runId": run_id, "executionArn": execution_arn}
