"""The environment variables the Lambda handlers read, in one validated model.

Every handler reads its configuration through :func:`load_settings`, so a missing or malformed
variable fails with a message naming the variable, instead of a ``KeyError`` deep in a handler.
Variables only some handlers need are optional here and demanded with :meth:`Settings.require`,
so one template can give each function only the variables it uses.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from icetide.dms.arn_names import ARN_NAME_PREFIX_PATTERN
from icetide.dms.stop_position import DEFAULT_STOP_AFTER_SECONDS
from icetide.errors import IcetideError


class SettingsInvalid(IcetideError):
    """An environment variable the handler needs is missing or malformed (a deployment error)."""


class Settings(BaseSettings):
    """icetide's environment variables (docs/contracts.md, "Environment variables")."""

    # Environment variable names are the upper-case field names; extra variables (the whole
    # Lambda environment) are ignored.
    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True)

    control_table_name: str = Field(min_length=3, max_length=255)
    # The CloudFormation stack name (AWS::StackName): scopes DMS identifiers and the stack tag that
    # template.yaml's IAM conditions pin. CloudFormation's own rule for stack names.
    stack_name: str | None = Field(default=None, max_length=128, pattern=r"^[A-Za-z][A-Za-z0-9-]*$")
    # The start of the ResourceIdentifier of every DMS resource a run creates (icetide.dms.arn_names):
    # template.yaml allows tagging only ARNs that carry it.
    dms_arn_name_prefix: str | None = Field(default=None, pattern=ARN_NAME_PREFIX_PATTERN)
    state_machine_arn: str | None = None
    schedule_slot_minutes: int = Field(default=60, ge=1, le=1440)
    # The table-maintenance state machine StartMaintenance starts, and its slot: one maintenance run
    # per table and slot (a day by default, a week at most).
    maintenance_state_machine_arn: str | None = None
    maintenance_slot_minutes: int = Field(default=1440, ge=1, le=10080)
    # The slot of a run started by S3 events: a burst of files within one slot starts one execution.
    event_slot_minutes: int = Field(default=5, ge=1, le=60)
    lock_stale_after_seconds: int = Field(default=21600, ge=1)
    raw_bucket: str | None = None
    bronze_prefix: str = "bronze"
    manifest_prefix: str = "manifests"
    glue_database: str | None = None
    replication_instance_arn: str | None = None
    # The long-lived instance continuous cdc tables' tasks run on, when their items name none
    # (falls back to replication_instance_arn).
    continuous_replication_instance_arn: str | None = None
    # How long the lifecycle rule keeps continuous tables' files (ContinuousBronzeRetentionDays).
    continuous_bronze_retention_days: int = Field(default=14, ge=1)
    replication_instance_class: str = "dms.t3.medium"
    # EngineVersion of the instances runs create (template parameter DmsEngineVersion); its default
    # is the template's, and icetide.dms.engine_version says which versions can run icetide's tasks.
    replication_engine_version: str = Field(default="3.5.4", pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")
    # Days the task logs of a run's own instance are kept (LogRetentionDays); None: DMS's default
    # group without retention (a run then leaves one group behind for ever).
    dms_log_retention_days: int | None = Field(default=None, ge=1)
    replication_subnet_group_id: str | None = None
    # NoDecode: the template passes a comma-separated list, not the JSON pydantic-settings expects.
    replication_security_group_ids: Annotated[tuple[str, ...], NoDecode] = ()
    source_endpoint_arn: str | None = None
    dms_target_role_arn: str | None = None
    dms_timestamp_column: str = "dms_timestamp"
    # How long after its start a windowed cdc run's task stops (icetide.dms.stop_position).
    cdc_stop_after_seconds: int = Field(default=DEFAULT_STOP_AFTER_SECONDS, ge=1, le=3600)

    @field_validator("replication_security_group_ids", mode="before")
    @classmethod
    def _split_comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator(
        "stack_name",
        "dms_arn_name_prefix",
        "state_machine_arn",
        "maintenance_state_machine_arn",
        "raw_bucket",
        "glue_database",
        "replication_instance_arn",
        "continuous_replication_instance_arn",
        "replication_subnet_group_id",
        "source_endpoint_arn",
        "dms_target_role_arn",
        mode="before",
    )
    @classmethod
    def _empty_means_unset(cls, value: object) -> object:
        # CloudFormation cannot omit a variable conditionally; an empty string stands for "not set".
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("bronze_prefix", "manifest_prefix")
    @classmethod
    def _strip_slashes(cls, value: str) -> str:
        # Prefixes are joined with "/" by the code; stray slashes would produce "a//b" keys.
        stripped = value.strip("/")
        if not stripped:
            raise ValueError("must name a non-empty S3 prefix")
        return stripped

    def require(self, field: str) -> str:
        """Return an optional setting this handler cannot work without, or fail naming its variable."""
        value = getattr(self, field)
        if value is None:
            raise SettingsInvalid(f"environment variable {field.upper()} is not set; this handler needs it")
        return str(value)


def load_settings() -> Settings:
    """Read the settings from the environment, turning validation errors into one clear message.

    Read per invocation rather than cached: it costs microseconds, and tests (and the local
    stack) change the environment between invocations of the same process.
    """
    try:
        return Settings()  # type: ignore[call-arg]  # values come from the environment
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in issue['loc']).upper()}: {issue['msg']}"
            for issue in error.errors()
        )
        raise SettingsInvalid(f"invalid icetide environment: {problems}") from error
