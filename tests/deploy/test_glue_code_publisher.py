"""The GlueCode custom resource: its inline function copies the Glue job's code out of the layer.

The function's source is read from template.yaml itself, so these tests check what is deployed.
"""

from __future__ import annotations

import http.server
import io
import json
import os
import re
import subprocess
import sys
import threading
import types
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from deploy.template_model import REPO_ROOT, template

BUCKET = "icetide-raw-test"
SCRIPT = b"print('bronze to silver')\n"


@pytest.fixture
def publisher() -> types.ModuleType:
    source = template()["Resources"]["GlueCodePublisherFunction"]["Properties"]["Code"]["ZipFile"]
    module = types.ModuleType("glue_code_publisher")
    # Lambda runs this text as index.py; executing it here tests exactly that text.
    exec(compile(source, "template.yaml:GlueCodePublisherFunction", "exec"), module.__dict__)  # noqa: S102
    return module


def layer_zip(
    files: dict[str, bytes], date: tuple[int, int, int, int, int, int] = (2026, 11, 21, 7, 0, 0)
) -> bytes:
    """A layer zip as `sam build` makes it for a python3.x layer (sources under python/)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=date), content)
    return buffer.getvalue()


GLUE_LAYER = {
    "python/bronze_to_silver.py": SCRIPT,
    "python/icetide_glue/__init__.py": b"",
    "python/icetide_glue/sql.py": b"MERGE = 'MERGE INTO'\n",
    "python/icetide_glue/__pycache__/sql.cpython-311.pyc": b"\x00compiled",
    "python/other_package/util.py": b"X = 1\n",
}


def zip_entries(content: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_artifacts_are_the_script_and_the_package_modules_only(publisher: types.ModuleType) -> None:
    script, package = publisher.glue_artifacts(layer_zip(GLUE_LAYER))

    assert script == SCRIPT
    assert zip_entries(package) == {
        "icetide_glue/__init__.py": b"",
        "icetide_glue/sql.py": b"MERGE = 'MERGE INTO'\n",
    }


def test_the_same_code_gives_the_same_package_bytes(publisher: types.ModuleType) -> None:
    reordered = dict(reversed(list(GLUE_LAYER.items())))

    _, first = publisher.glue_artifacts(layer_zip(GLUE_LAYER))
    _, second = publisher.glue_artifacts(layer_zip(reordered, date=(2027, 1, 2, 3, 4, 5)))

    assert first == second


@pytest.mark.parametrize(
    ("missing", "named"),
    [
        ("python/bronze_to_silver.py", "python/bronze_to_silver.py"),
        ("python/icetide_glue/__init__.py", "__init__.py"),
    ],
)
def test_a_layer_without_the_glue_code_is_refused(
    publisher: types.ModuleType, missing: str, named: str
) -> None:
    incomplete = {name: content for name, content in GLUE_LAYER.items() if name != missing}

    with pytest.raises(publisher.GlueCodeMissing, match=re.escape(named)):
        publisher.glue_artifacts(layer_zip(incomplete))


def test_the_real_glue_package_imports_from_the_published_zip(
    publisher: types.ModuleType, tmp_path: Path
) -> None:
    # What `sam build` puts in the layer: glue_jobs/ copied under python/.
    glue_jobs = REPO_ROOT / "glue_jobs"
    sources = {
        f"python/{path.relative_to(glue_jobs).as_posix()}": path.read_bytes()
        for path in glue_jobs.rglob("*.py")
    }
    _, package = publisher.glue_artifacts(layer_zip(sources))
    extra_py_files = tmp_path / "icetide_glue.zip"
    extra_py_files.write_bytes(package)

    # Glue puts --extra-py-files zips on the PYTHONPATH: import from the zip alone, outside the repo.
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(extra_py_files)!r}); "
            "import icetide_glue.arguments as a; print(a.__file__)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(extra_py_files / "icetide_glue" / "arguments.py")


class Responses:
    """What the function answered CloudFormation, captured instead of an HTTP PUT."""

    def __init__(self) -> None:
        self.answers: list[dict[str, Any]] = []

    def __call__(
        self, event: dict[str, Any], status: str, physical_id: str, data: dict[str, Any], reason: str
    ) -> None:
        self.answers.append(
            {"Status": status, "PhysicalResourceId": physical_id, "Data": data, "Reason": reason}
        )

    @property
    def last(self) -> dict[str, Any]:
        return self.answers[-1]


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client: Any = boto3.client("s3")
        client.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": os.environ["AWS_DEFAULT_REGION"]}
        )
        yield client


@pytest.fixture
def invoke(publisher: types.ModuleType, s3: Any, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Responses]:
    """Run the handler as CloudFormation would, with the layer download and the answer stubbed."""
    responses = Responses()
    monkeypatch.setattr(publisher, "respond", responses)

    def run(request_type: str, layer: bytes = b"", physical_id: str | None = None) -> Responses:
        monkeypatch.setattr(publisher, "download_layer", lambda arn: layer)
        event = {
            "RequestType": request_type,
            "ResourceProperties": {
                "LayerVersionArn": "arn:aws:lambda:eu-west-1:123456789012:layer:icetide-glue-code:3",
                "Bucket": BUCKET,
                "Prefix": "glue",
            },
            "StackId": "stack",
            "RequestId": "request",
            "LogicalResourceId": "GlueCode",
            "ResponseURL": "https://cloudformation-response.invalid/",
        }
        if physical_id is not None:
            event["PhysicalResourceId"] = physical_id
        publisher.handler(event, None)
        return responses

    return run


def _object(s3: Any, uri: str) -> bytes:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())


def test_create_publishes_script_and_package_under_a_content_named_folder(invoke: Any, s3: Any) -> None:
    answer = invoke("Create", layer_zip(GLUE_LAYER)).last
    folder = answer["PhysicalResourceId"]

    assert answer["Status"] == "SUCCESS"
    assert re.fullmatch(rf"s3://{BUCKET}/glue/[0-9a-f]{{16}}/", folder)
    assert answer["Data"] == {
        "ScriptLocation": f"{folder}bronze_to_silver.py",
        "ExtraPyFiles": f"{folder}icetide_glue.zip",
    }
    assert _object(s3, answer["Data"]["ScriptLocation"]) == SCRIPT
    assert set(zip_entries(_object(s3, answer["Data"]["ExtraPyFiles"]))) == {
        "icetide_glue/__init__.py",
        "icetide_glue/sql.py",
    }


def test_changed_code_is_published_to_another_folder(invoke: Any) -> None:
    first = invoke("Create", layer_zip(GLUE_LAYER)).last["PhysicalResourceId"]
    changed = {**GLUE_LAYER, "python/icetide_glue/sql.py": b"MERGE = 'MERGE INTO silver'\n"}

    second = invoke("Update", layer_zip(changed), physical_id=first).last["PhysicalResourceId"]

    assert second != first


def test_delete_removes_what_create_wrote(invoke: Any, s3: Any) -> None:
    folder = invoke("Create", layer_zip(GLUE_LAYER)).last["PhysicalResourceId"]

    answer = invoke("Delete", physical_id=folder).last

    assert answer["Status"] == "SUCCESS"
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_delete_after_a_failed_create_succeeds_without_touching_s3(invoke: Any) -> None:
    answer = invoke("Delete", physical_id="not-published").last

    assert answer == {"Status": "SUCCESS", "PhysicalResourceId": "not-published", "Data": {}, "Reason": ""}


def test_a_failure_reaches_cloudformation_with_its_cause(invoke: Any, s3: Any) -> None:
    without_script = {k: v for k, v in GLUE_LAYER.items() if k != "python/bronze_to_silver.py"}

    answer = invoke("Create", layer_zip(without_script)).last

    assert answer["Status"] == "FAILED"
    assert answer["Reason"] == "GlueCodeMissing: the layer has no python/bronze_to_silver.py"
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_respond_puts_the_answer_cloudformation_expects(publisher: types.ModuleType) -> None:
    received: list[tuple[str, dict[str, Any]]] = []

    class ResponseUrl(http.server.BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.command, json.loads(body)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), ResponseUrl)
    thread = threading.Thread(target=server.handle_request)
    thread.start()
    event = {
        "StackId": "arn:stack",
        "RequestId": "r-1",
        "LogicalResourceId": "GlueCode",
        "ResponseURL": f"http://127.0.0.1:{server.server_port}/answer",
    }
    publisher.respond(event, "SUCCESS", "s3://b/glue/abc/", {"ScriptLocation": "s3://b/glue/abc/s.py"}, "")
    thread.join(timeout=10)
    server.server_close()

    assert received == [
        (
            "PUT",
            {
                "Status": "SUCCESS",
                "Reason": "see the function's log",
                "PhysicalResourceId": "s3://b/glue/abc/",
                "StackId": "arn:stack",
                "RequestId": "r-1",
                "LogicalResourceId": "GlueCode",
                "Data": {"ScriptLocation": "s3://b/glue/abc/s.py"},
            },
        )
    ]
