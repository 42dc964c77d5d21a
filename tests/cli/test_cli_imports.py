"""What the `icetide` command loads: nothing heavy for `--help`, no extra for the AWS verbs, and a clear
line naming the extra when a local or Spark command lacks one.

Each test runs `icetide` in a fresh interpreter of its own (``sys.modules`` of this test process
holds everything the other tests imported), its commands one after the other there. "A plain
install" is simulated by an import hook that makes the extras' modules (pyspark, moto, the DMS
stand-in's sqlalchemy and pyarrow, pyiceberg, psycopg) not found, as `pip install icetide` without
extras leaves them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.conftest import CliResult
from icetide_local.workspace import Workspace

EXTRAS_MODULES = ("pyspark", "moto", "sqlalchemy", "pyarrow", "pyiceberg", "psycopg")
NOT_INSTALLED = f"""
import importlib.abc
import sys


class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {EXTRAS_MODULES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
"""
# Runs `icetide` once per argument list in one interpreter (each start costs as much as the command),
# and reports each run's exit code and output, then every top-level module loaded by all of them.
RUN_ICETIDE = """
import contextlib
import io
import json
import sys

from icetide_cli.main import main

runs = []
for arguments in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(arguments)
    runs.append([code, out.getvalue(), err.getvalue()])
print(json.dumps({"runs": runs, "modules": sorted(sys.modules)}))
"""


def icetide_processes(
    *invocations: tuple[object, ...], plain_install: bool = False
) -> tuple[list[CliResult], set[str]]:
    """Each `icetide ARGS` of ``invocations``, one after the other in one new interpreter: their
    results, and the top-level packages the interpreter had imported by the end."""
    code = (NOT_INSTALLED if plain_install else "") + RUN_ICETIDE
    arguments = json.dumps([[str(argument) for argument in invocation] for invocation in invocations])
    done = subprocess.run(
        [sys.executable, "-c", code, arguments], capture_output=True, text=True, timeout=120, check=False
    )
    # Whatever a command printed below Python's sys.stderr (a child process, a C library) is here.
    assert done.returncode == 0 and not done.stderr, done.stderr
    report = json.loads(done.stdout)
    loaded = {name.partition(".")[0] for name in report["modules"]}
    return [CliResult(code, out, err) for code, out, err in report["runs"]], loaded


def icetide_process(*args: object, plain_install: bool = False) -> tuple[CliResult, set[str]]:
    """`icetide ARGS` in a new interpreter: its result, and the top-level packages it had imported."""
    (result,), loaded = icetide_processes(args, plain_install=plain_install)
    return result, loaded


def test_help_lists_the_operator_verbs_and_loads_neither_moto_nor_spark_nor_the_local_stack() -> None:
    result, loaded = icetide_process("--help")

    assert result.exit_code == 0, result.err
    for verb in ("status", "runs", "run", "reset", "unlock", "tables", "job", "local"):
        assert f"    {verb} " in result.out
    assert loaded.isdisjoint({"moto", "pyspark", "icetide_local", "sqlalchemy", "pyarrow"}), loaded


def test_help_does_not_load_boto3() -> None:
    _, loaded = icetide_process("--help")

    assert "boto3" not in loaded and "botocore" not in loaded


def test_version_is_the_installed_packages(icetide) -> None:
    result = icetide("--version")

    assert (result.exit_code, result.out) == (0, "icetide 0.1.0\n")


def _workspace(tmp_path: Path) -> Path:
    workspace = Workspace.open(tmp_path / "ws")
    workspace.save_control_items(
        [
            {
                "targetTableName": {"S": "orders"},
                "sourceSchema": {"S": "main"},
                "sourceTable": {"S": "orders"},
                "filtercolumn": {"S": "id"},
                "filteroperator": {"S": "gte"},
                "startvalue": {"N": "0"},
                "primaryKeys": {"S": "id"},
                "watermark": {"N": "7"},
                "lockHolder": {"S": "orders-20261124T1000Z"},
                "lockTime": {"S": "2026-11-24T10:00:00Z"},
            }
        ]
    )
    return workspace.root


def test_a_plain_install_runs_the_operator_verbs(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)

    (status, runs, unlock, reset), loaded = icetide_processes(
        ("status", "--workspace", workspace, "--json"),
        ("runs", "orders", "--workspace", workspace),
        ("unlock", "orders", "--workspace", workspace),
        ("reset", "orders", "--to", "3", "--workspace", workspace),
        plain_install=True,
    )

    assert json.loads(status.out)[0]["watermark"] == 7, status.err
    assert loaded.isdisjoint(EXTRAS_MODULES)
    assert (runs.exit_code, runs.out) == (0, "orders has not run yet\n")
    assert (unlock.exit_code, reset.exit_code) == (0, 0), unlock.err + reset.err
    assert reset.out == "orders: watermark 7 -> 3; its next run reads id from 3 (gte)\n"


def test_a_plain_install_reaches_aws_with_the_stack_verbs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing listens there: the verb gets as far as its first AWS call, with every module it needs.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    verbs = [
        ("status",),
        ("runs", "orders"),
        ("run", "orders"),
        ("reset", "orders", "--to", "1"),
        ("unlock", "x"),
        ("verify", "orders"),
        ("reload", "orders"),
    ]
    results, loaded = icetide_processes(
        *((*verb, "--stack", "icetide-prod", "--region", "eu-west-1") for verb in verbs), plain_install=True
    )

    for verb, result in zip(verbs, results, strict=True):
        assert result.exit_code == 2, result.err
        assert result.err.startswith(
            f"icetide {verb[0]}: stack icetide-prod: Could not connect to the endpoint URL"
        )
    assert loaded.isdisjoint(EXTRAS_MODULES)


LOCAL_RUN = ("--workspace", "{ws}", "--source", "sqlite:///{ws}/shop.db", "--tables", "{ws}/t.json")


@pytest.mark.parametrize(
    ("arguments", "extra"),
    [
        (("run", *LOCAL_RUN), "local"),
        (("local", "run", *LOCAL_RUN), "local"),
        (("local", "demo"), "local"),
        (
            ("job", "run", "--bronze", "{ws}", "--warehouse", "{ws}/wh", "--table", "db.t", "--keys", "id"),
            "spark",
        ),
    ],
)
def test_a_local_or_spark_command_without_its_extra_names_the_extra_to_install(
    tmp_path: Path, arguments: tuple[str, ...], extra: str
) -> None:
    (tmp_path / "t.json").write_text(json.dumps([{"targetTableName": "orders"}]))

    result, _ = icetide_process(*(argument.format(ws=tmp_path) for argument in arguments), plain_install=True)

    assert result.exit_code == 1
    last_line = result.err.splitlines()[-1]
    assert last_line.startswith(f"icetide {arguments[0]}: this command needs ")
    assert last_line.endswith(
        f", which is not installed (a plain install has the AWS commands only): install the {extra} extra: "
        f"pip install 'icetide[{extra}]'"
    )
    assert "Traceback" not in result.err
