"""The source endpoint's PostgreSQL replication slot: parameters, the condition that applies them, the rule.

A table with captureMode cdc on PostgreSQL needs a logical replication slot that outlives the per-run
DMS tasks; the slot is named on the stack's one source endpoint only when the engine is PostgreSQL and
a slot name is given (docs/sources.md). The conditions and the rule are evaluated here with the
parameter values a deploy would give, so the tests check what CloudFormation would create, not how
the template happens to spell it.
"""

from __future__ import annotations

import re
from typing import Any

import botocore.session
import pytest

from deploy.template_model import REPO_ROOT, resources_of_type, template
from deploy.template_values import REQUIRED_VALUES, parameter_values, refusals, resolve

SLOT = "PostgresSlotName"
PLUGIN = "PostgresPluginName"
POSTGRES_ENGINES = ("postgres", "aurora-postgresql")
OTHER_ENGINES = ("oracle", "sqlserver", "mysql", "mariadb", "aurora")


def _postgres_settings(**given: str) -> dict[str, Any] | None:
    """The source endpoint's PostgreSqlSettings for a deploy with these parameters (None: left out)."""
    endpoint = resources_of_type("AWS::DMS::Endpoint")["DmsSourceEndpoint"]["Properties"]
    resolved = resolve(endpoint, parameter_values(**given))
    return resolved.get("PostgreSqlSettings")


def _dms_postgres_settings_shape() -> Any:
    return botocore.session.get_session().get_service_model("dms").shape_for("PostgreSQLSettings")


def test_slot_name_is_an_optional_parameter_saying_what_to_create_first() -> None:
    parameter = template()["Parameters"][SLOT]

    assert parameter["Type"] == "String"
    assert parameter["Default"] == ""
    assert "pg_create_logical_replication_slot" in parameter["Description"]
    assert "docs/sources.md" in parameter["Description"]


@pytest.mark.parametrize("name", ["", "icetide_orders", "slot_2", "a" * 63])
def test_slot_name_accepts_empty_or_a_postgresql_slot_name(name: str) -> None:
    assert re.fullmatch(template()["Parameters"][SLOT]["AllowedPattern"], name)


@pytest.mark.parametrize("name", ["Icetide_Orders", "icetide-orders", "a" * 64, "orders; DROP", " orders"])
def test_slot_name_refuses_what_postgresql_would_refuse(name: str) -> None:
    # PostgreSQL: lower-case letters, digits and underscores, at most NAMEDATALEN - 1 = 63 bytes.
    assert not re.fullmatch(template()["Parameters"][SLOT]["AllowedPattern"], name)


def test_plugin_names_are_dms_plugin_values_for_a_slot_created_beforehand() -> None:
    parameter = template()["Parameters"][PLUGIN]
    dms_values = set(_dms_postgres_settings_shape().members["PluginName"].enum)

    # DMS spells the built-in plugin test-decoding; "no-preference" would let DMS pick a plugin
    # other than the one the slot was created with.
    assert set(parameter["AllowedValues"]) == {"test-decoding", "pglogical"}
    assert set(parameter["AllowedValues"]) <= dms_values
    assert parameter["Default"] == "test-decoding"


def test_slot_parameters_are_shown_with_the_source_database() -> None:
    groups = template()["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    (source,) = [group for group in groups if group["Label"]["default"].startswith("Source database")]

    assert {SLOT, PLUGIN} <= set(source["Parameters"])


@pytest.mark.parametrize("engine", POSTGRES_ENGINES)
@pytest.mark.parametrize("plugin", ["test-decoding", "pglogical"])
def test_postgres_endpoint_names_the_slot_and_its_plugin(engine: str, plugin: str) -> None:
    settings = _postgres_settings(
        DatabaseEngine=engine, PostgresSlotName="icetide_orders", PostgresPluginName=plugin
    )

    assert settings is not None
    assert settings["SlotName"] == "icetide_orders"
    assert settings["PluginName"] == plugin
    assert settings["SecretsManagerSecretId"] == REQUIRED_VALUES["DatabaseSecretArn"]


@pytest.mark.parametrize("engine", POSTGRES_ENGINES)
def test_postgres_endpoint_without_a_slot_name_sets_neither_slot_nor_plugin(engine: str) -> None:
    settings = _postgres_settings(DatabaseEngine=engine)

    assert settings is not None
    assert {"SlotName", "PluginName"} & set(settings) == set()
    assert settings["SecretsManagerSecretId"] == REQUIRED_VALUES["DatabaseSecretArn"]


@pytest.mark.parametrize("engine", OTHER_ENGINES)
def test_other_engines_get_no_postgresql_settings(engine: str) -> None:
    assert _postgres_settings(DatabaseEngine=engine) is None


def test_the_settings_are_members_of_dms_postgresql_settings() -> None:
    endpoint = resources_of_type("AWS::DMS::Endpoint")["DmsSourceEndpoint"]["Properties"]
    _, when_postgres, _ = endpoint["PostgreSqlSettings"]["Fn::If"]

    assert {"SlotName", "PluginName"} <= set(when_postgres)
    assert set(when_postgres) <= set(_dms_postgres_settings_shape().members)


@pytest.mark.parametrize("engine", OTHER_ENGINES)
def test_a_slot_name_with_another_engine_is_refused_at_deploy(engine: str) -> None:
    (refusal,) = refusals(DatabaseEngine=engine, PostgresSlotName="icetide_orders")

    assert SLOT in refusal


@pytest.mark.parametrize(
    "given",
    [
        {"DatabaseEngine": "postgres", "PostgresSlotName": "icetide_orders"},
        {"DatabaseEngine": "aurora-postgresql", "PostgresSlotName": "icetide_orders"},
        {"DatabaseEngine": "postgres"},
        {"DatabaseEngine": "mysql"},
    ],
)
def test_postgres_with_a_slot_and_any_engine_without_one_deploy(given: dict[str, str]) -> None:
    assert refusals(**given) == []


def test_the_sources_page_names_the_slot_parameters() -> None:
    page = (REPO_ROOT / "docs" / "sources.md").read_text(encoding="utf-8")

    assert SLOT in page
    assert PLUGIN in page
