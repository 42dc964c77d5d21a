"""The local driver JVM's options: icetide's quiet log configuration, then what
$ICETIDE_SPARK_JAVA_OPTIONS adds."""

from __future__ import annotations

import pytest

from icetide_local.spark import SPARK_JAVA_OPTIONS_VARIABLE, driver_java_options, quiet_log_configuration


def test_the_log_configuration_comes_first_and_the_variable_is_appended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SPARK_JAVA_OPTIONS_VARIABLE, " -XX:TieredStopAtLevel=1 -Xss4m ")

    first, *rest = driver_java_options().split(" ")

    assert first.startswith("-Dlog4j2.configurationFile=file:")
    assert rest == ["-XX:TieredStopAtLevel=1", "-Xss4m"]


@pytest.mark.parametrize("value", [None, "", "   "])
def test_without_the_variable_only_the_log_configuration_is_given(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv(SPARK_JAVA_OPTIONS_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(SPARK_JAVA_OPTIONS_VARIABLE, value)

    assert driver_java_options() == f"-Dlog4j2.configurationFile=file:{quiet_log_configuration()}"
