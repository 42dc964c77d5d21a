"""Without a configured account, make test-aws says in one line what it needs, and spends nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide_acceptance.__main__ import EXIT_NOT_CONFIGURED, main
from icetide_acceptance.preflight import Configuration, configuration


def _no_credentials() -> None:
    raise RuntimeError("Unable to locate\ncredentials")


def test_nothing_configured_names_everything_missing_in_one_line() -> None:
    found, line = configuration({}, _no_credentials)
    assert found is None
    assert line == (
        "make test-aws needs ICETIDE_STACK, ICETIDE_SOURCE_URL and AWS credentials (ICETIDE_STACK is not "
        "set; ICETIDE_SOURCE_URL is not set; "
        "aws sts get-caller-identity failed: Unable to locate credentials)"
    )


def test_a_configured_account_gives_the_stack_and_source() -> None:
    environ = {"ICETIDE_STACK": " icetide-test ", "ICETIDE_SOURCE_URL": "postgresql+psycopg://u@h/db"}
    found, line = configuration(environ, lambda: {"Account": "123456789012"})
    assert (found, line) == (Configuration("icetide-test", "postgresql+psycopg://u@h/db"), "")


def test_credentials_alone_are_not_enough() -> None:
    found, line = configuration({"ICETIDE_STACK": "s"}, lambda: None)
    assert found is None
    assert line.endswith("(ICETIDE_SOURCE_URL is not set)")


def test_the_command_prints_one_line_and_exits_2_without_an_account(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("ICETIDE_STACK", "ICETIDE_SOURCE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "config"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_PROFILE", "icetide-acceptance-absent")

    assert main(["--preflight"]) == EXIT_NOT_CONFIGURED
    assert main([]) == EXIT_NOT_CONFIGURED
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2
    assert printed[0] == printed[1]
    assert printed[0].startswith(
        "make test-aws needs ICETIDE_STACK, ICETIDE_SOURCE_URL and AWS credentials ("
    )
    assert "aws sts get-caller-identity failed: The config profile (icetide-acceptance-absent)" in printed[0]
