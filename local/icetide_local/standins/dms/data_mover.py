"""The replicator plugged into the DMS lifecycle: the local stack's source endpoint and data mover.

The DMS lifecycle calls a data mover when a task starts running; here that mover is the
replicator, reading the user's database (a SQLAlchemy URL) and writing DMS's parquet files into the
run's S3 target folder in moto: a full load, its changes since, or a CDC window, by the task's
MigrationType. The URL, which may hold a password, stays in this process's memory: the moto source
endpoint records only what DMS would show (engine, server, port, database, user, and for PostgreSQL
the replication slot the task reads changes from).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from icetide_local.standins.dms import lifecycle
from icetide_local.standins.dms.cdc import DEFAULT_SLOT_NAME
from icetide_local.standins.dms.replicator import FULL_LOAD, TABLE_ERROR, run_replication
from icetide_local.standins.dms.source import masked_url

# SQLAlchemy backend name -> DMS EngineName (sqlite is the stand-in's own: DMS has no SQLite source).
_DMS_ENGINE_NAMES = {
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mariadb",
    "oracle": "oracle",
    "mssql": "sqlserver",
    "sqlite": "sqlite",
}


class SourceUrlInvalid(ValueError):
    """The source is not a SQLAlchemy database URL."""


class SourceTablesFailed(lifecycle.MoverFailed):
    """Some selected tables could not be loaded; the message has each table's reason.

    DMS reports such a table as "Table error" in its table statistics and the reason in the task
    log; the stand-in fails the task with the reasons, so they reach the run's recorded failure.
    ``last_cdc_file`` names the newest CDC file the other tables got meanwhile.
    """


def source_endpoint_settings(source_url: str, *, slot_name: str | None = None) -> dict[str, Any]:
    """The moto source endpoint's CreateEndpoint settings for `source_url` (never the password).

    With `slot_name`, a PostgreSQL endpoint names the logical replication slot CDC tasks read
    (``PostgreSQLSettings``, as DMS's ``slotName`` extra connection attribute does).
    """
    try:
        url = make_url(source_url)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number
        # Not chained: the parser's own message would repeat the text, password and all.
        raise SourceUrlInvalid(
            f"{masked_url(source_url)!r} is not a SQLAlchemy database URL (e.g. sqlite:///shop.db or "
            "postgresql+psycopg://user:password@host:5432/db)"
        ) from None
    backend = url.get_backend_name()
    settings: dict[str, Any] = {"EngineName": _DMS_ENGINE_NAMES.get(backend, backend)}
    optional = {
        "ServerName": url.host,
        "Port": url.port,
        "DatabaseName": url.database,
        "Username": url.username,
    }
    settings.update({name: value for name, value in optional.items() if value})
    if slot_name and backend == "postgresql":
        settings["PostgreSQLSettings"] = {"SlotName": slot_name, "PluginName": "test-decoding"}
    return settings


def _slot_name(source_endpoint: Mapping[str, Any]) -> str:
    postgres_settings = source_endpoint.get("PostgreSQLSettings") or {}
    return str(postgres_settings.get("SlotName") or DEFAULT_SLOT_NAME)


def replicator_mover(source_url: str) -> lifecycle.DataMover:
    """A data mover that runs the replicator against `source_url`, as the task's MigrationType says.

    A full load returns the tables' statistics; a CDC task a :class:`lifecycle.MoverResult` that adds
    the checkpoint to start the next task from.
    """

    def move(
        run: lifecycle.ReplicationTaskRun,
    ) -> Sequence[lifecycle.TableStatistics] | lifecycle.MoverResult:
        result = run_replication(
            run.table_mappings,
            run.target_s3_settings,
            source_url,
            migration_type=run.migration_type,
            cdc_start_position=run.cdc_start_position,
            cdc_stop_position=run.cdc_stop_position,
            slot_name=_slot_name(run.source_endpoint),
            cdc_files_after=run.last_cdc_file,
        )
        errors = [
            table.error_message or f"{table.schema}.{table.table} failed"
            for table in result.tables
            if table.state == TABLE_ERROR
        ]
        if errors:
            raise SourceTablesFailed("; ".join(errors), last_cdc_file=result.last_cdc_file)
        statistics = [
            lifecycle.TableStatistics(
                schema=table.schema,
                table=table.table,
                full_load_rows=table.full_load_rows,
                state=table.state,
                inserts=table.inserts,
                updates=table.updates,
                deletes=table.deletes,
            )
            for table in result.tables
        ]
        if run.migration_type == FULL_LOAD:
            return statistics
        return lifecycle.MoverResult(tuple(statistics), result.recovery_checkpoint, result.last_cdc_file)

    return move
