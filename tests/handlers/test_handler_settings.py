"""The handlers' environment: defaults, comma-separated lists, and errors naming the variable."""

from __future__ import annotations

import pytest

from icetide.settings import SettingsInvalid, load_settings


def test_defaults_apply_when_only_the_control_table_is_set(monkeypatch):
    for name in (
        "SCHEDULE_SLOT_MINUTES",
        "LOCK_STALE_AFTER_SECONDS",
        "BRONZE_PREFIX",
        "MANIFEST_PREFIX",
        "REPLICATION_INSTANCE_CLASS",
        "REPLICATION_ENGINE_VERSION",
        "REPLICATION_SECURITY_GROUP_IDS",
        "DMS_TIMESTAMP_COLUMN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CONTROL_TABLE_NAME", "icetide-control")

    settings = load_settings()

    assert settings.schedule_slot_minutes == 60
    assert settings.lock_stale_after_seconds == 21600
    assert (settings.bronze_prefix, settings.manifest_prefix) == ("bronze", "manifests")
    assert settings.replication_instance_class == "dms.t3.medium"
    assert settings.replication_engine_version == "3.5.4"
    assert settings.replication_security_group_ids == ()
    assert settings.dms_timestamp_column == "dms_timestamp"


def test_security_groups_are_comma_separated(handler_env):
    assert load_settings().replication_security_group_ids == ("sg-0a1b2c3d4e5f60718", "sg-0f1e2d3c4b5a69788")


def test_a_missing_control_table_is_named(handler_env, monkeypatch):
    monkeypatch.delenv("CONTROL_TABLE_NAME")

    with pytest.raises(SettingsInvalid, match="CONTROL_TABLE_NAME"):
        load_settings()


def test_a_malformed_number_is_named(handler_env, monkeypatch):
    monkeypatch.setenv("LOCK_STALE_AFTER_SECONDS", "six hours")

    with pytest.raises(SettingsInvalid, match="LOCK_STALE_AFTER_SECONDS"):
        load_settings()


def test_an_empty_optional_variable_counts_as_unset(handler_env, monkeypatch):
    # CloudFormation cannot leave a variable out conditionally; the template passes "".
    monkeypatch.setenv("REPLICATION_INSTANCE_ARN", "")

    settings = load_settings()

    assert settings.replication_instance_arn is None
    with pytest.raises(SettingsInvalid, match="REPLICATION_INSTANCE_ARN is not set"):
        settings.require("replication_instance_arn")


def test_prefixes_lose_stray_slashes(handler_env, monkeypatch):
    monkeypatch.setenv("BRONZE_PREFIX", "/landing/bronze/")

    assert load_settings().bronze_prefix == "landing/bronze"


@pytest.mark.parametrize("prefix", ["icetide", "icetide51af3dc", "icetide51AF3DC0", "other51af3dc0"])
def test_an_arn_name_prefix_not_as_the_template_spells_it_is_named(handler_env, monkeypatch, prefix):
    monkeypatch.setenv("DMS_ARN_NAME_PREFIX", prefix)

    with pytest.raises(SettingsInvalid, match="DMS_ARN_NAME_PREFIX"):
        load_settings()


@pytest.mark.parametrize("stack_name", ["my_stack", "1icetide", "icetide prod", "x" * 129])
def test_a_stack_name_cloudformation_would_refuse_is_named(handler_env, monkeypatch, stack_name):
    monkeypatch.setenv("STACK_NAME", stack_name)

    with pytest.raises(SettingsInvalid, match="STACK_NAME"):
        load_settings()
