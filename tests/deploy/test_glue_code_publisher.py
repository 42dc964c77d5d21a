"""The GlueCode custom resource: its function copies the Glue job's code out of the two layers
(the Glue code layer: script and icetide_glue; the contracts layer: icetide_contracts).

The function is deploy/glue_code_publisher/glue_code_publisher.py, imported as Lambda imports it
(CodeUri deploy/glue_code_publisher/). crhelper answers CloudFormation over HTTPS: the tests answer
with a local HTTPS stand-in for the pre-signed response URL and check what it receives.
"""

from __future__ import annotations

import datetime
import http.server
import io
import ipaddress
import json
import os
import re
import ssl
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from moto import mock_aws

import glue_code_publisher
from deploy.template_model import REPO_ROOT

# crhelper retries an answer that does not arrive without end: fail instead of hanging.
pytestmark = pytest.mark.timeout(60)

BUCKET = "icetide-raw-test"
SCRIPT = b"print('bronze to silver')\n"
MAINTENANCE_SCRIPT = b"print('maintain silver')\n"
STACK_ID = "arn:aws:cloudformation:eu-west-1:123456789012:stack/icetide/4c1b7a52-5d0e-4f6a-9a43-0d8f4a1e2b3c"
# A pre-signed S3 URL's path and query, as CloudFormation hands it out.
RESPONSE_PATH = "/cloudformation-response/GlueCode?X-Amz-Expires=7200&X-Amz-Signature=abc123"


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
    "python/maintain_silver.py": MAINTENANCE_SCRIPT,
    "python/icetide_glue/__init__.py": b"",
    "python/icetide_glue/sql.py": b"MERGE = 'MERGE INTO'\n",
    "python/icetide_glue/__pycache__/sql.cpython-311.pyc": b"\x00compiled",
    # A subpackage (the job's run stages are packages of the package) is published with it.
    "python/icetide_glue/merge/__init__.py": b'"""The merge."""\n',
    "python/icetide_glue/merge/__pycache__/plan.cpython-311.pyc": b"\x00compiled",
    "python/icetide_glue/merge/plan.py": b"PLANS = ('driver', 'spark')\n",
    "python/other_package/util.py": b"X = 1\n",
}
CONTRACTS_LAYER = {
    "python/icetide_contracts/__init__.py": b"",
    "python/icetide_contracts/run_manifest.py": b"KEYS = ('runId',)\n",
    "python/icetide_contracts/__pycache__/run_manifest.cpython-311.pyc": b"\x00compiled",
}
GLUE_LAYER_ARN = "arn:aws:lambda:eu-west-1:123456789012:layer:icetide-glue-code:3"
CONTRACTS_LAYER_ARN = "arn:aws:lambda:eu-west-1:123456789012:layer:icetide-contracts:2"
# What the package zip holds of the layers above.
PACKAGE_ENTRIES = {
    "icetide_glue/__init__.py": b"",
    "icetide_glue/sql.py": b"MERGE = 'MERGE INTO'\n",
    "icetide_glue/merge/__init__.py": b'"""The merge."""\n',
    "icetide_glue/merge/plan.py": b"PLANS = ('driver', 'spark')\n",
    "icetide_contracts/__init__.py": b"",
    "icetide_contracts/run_manifest.py": b"KEYS = ('runId',)\n",
}


def zip_entries(content: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_artifacts_are_the_script_and_the_package_modules_only() -> None:
    scripts, package = glue_code_publisher.glue_artifacts(layer_zip(GLUE_LAYER), layer_zip(CONTRACTS_LAYER))

    assert scripts == {"bronze_to_silver.py": SCRIPT, "maintain_silver.py": MAINTENANCE_SCRIPT}
    assert zip_entries(package) == PACKAGE_ENTRIES


def test_the_same_code_gives_the_same_package_bytes() -> None:
    reordered = dict(reversed(list(GLUE_LAYER.items())))
    contracts_reordered = dict(reversed(list(CONTRACTS_LAYER.items())))
    later = (2027, 1, 2, 3, 4, 5)

    _, first = glue_code_publisher.glue_artifacts(layer_zip(GLUE_LAYER), layer_zip(CONTRACTS_LAYER))
    _, second = glue_code_publisher.glue_artifacts(
        layer_zip(reordered, date=later), layer_zip(contracts_reordered, date=later)
    )

    assert first == second


@pytest.mark.parametrize(
    ("missing", "named"),
    [
        ("python/bronze_to_silver.py", "python/bronze_to_silver.py"),
        ("python/maintain_silver.py", "python/maintain_silver.py"),
        ("python/icetide_glue/__init__.py", "__init__.py"),
    ],
)
def test_a_layer_without_the_glue_code_is_refused(missing: str, named: str) -> None:
    incomplete = {name: content for name, content in GLUE_LAYER.items() if name != missing}

    with pytest.raises(glue_code_publisher.GlueCodeMissing, match=re.escape(named)):
        glue_code_publisher.glue_artifacts(layer_zip(incomplete), layer_zip(CONTRACTS_LAYER))


def test_a_contracts_layer_without_the_contracts_is_refused() -> None:
    missing = "the layer has no python/icetide_contracts/__init__.py"
    with pytest.raises(glue_code_publisher.GlueCodeMissing, match=re.escape(missing)):
        # The Glue code layer given twice: the mistake of a template that names the wrong layer.
        glue_code_publisher.glue_artifacts(layer_zip(GLUE_LAYER), layer_zip(GLUE_LAYER))


def _built_layer(folder: Path) -> bytes:
    """A layer as `sam build` makes it of `folder` (its ContentUri): the folder copied under python/."""
    return layer_zip(
        {f"python/{path.relative_to(folder).as_posix()}": path.read_bytes() for path in folder.rglob("*.py")}
    )


def test_the_real_glue_package_imports_from_the_published_zip(tmp_path: Path) -> None:
    _, package = glue_code_publisher.glue_artifacts(
        _built_layer(REPO_ROOT / "glue_jobs"), _built_layer(REPO_ROOT / "contracts")
    )
    extra_py_files = tmp_path / "icetide_glue.zip"
    extra_py_files.write_bytes(package)

    # Glue puts --extra-py-files zips on the PYTHONPATH: import from the zip alone, outside the repo.
    # The manifest writer imports the contracts, so they must come from the zip as well.
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(extra_py_files)!r}); "
            "import icetide_glue.arguments as a; print(a.__file__); "
            "import icetide_glue.commit.manifest as m; print(sys.modules[m.RunManifest.__module__].__file__)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        str(extra_py_files / "icetide_glue" / "arguments.py"),
        str(extra_py_files / "icetide_contracts" / "run_manifest.py"),
    ]


@dataclass(frozen=True)
class Put:
    """One request that reached the response URL."""

    path: str
    content_type: str | None
    body: dict[str, Any]


@dataclass(frozen=True)
class ResponseUrl:
    """CloudFormation's pre-signed response URL, stood in for by a local HTTPS server."""

    url: str
    received: list[Put]


class Responses:
    """What the function answered CloudFormation: Status, PhysicalResourceId, Data, Reason."""

    def __init__(self, received: list[Put]) -> None:
        self._received = received

    @property
    def answers(self) -> list[dict[str, Any]]:
        fields = ("Status", "PhysicalResourceId", "Data", "Reason")
        return [{field: put.body[field] for field in fields} for put in self._received]

    @property
    def last(self) -> dict[str, Any]:
        return self.answers[-1]


class LambdaContext:
    """The part of Lambda's context crhelper reads: the time left, to answer before a timeout."""

    def get_remaining_time_in_millis(self) -> int:
        return 120_000  # the function's Timeout


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key: crhelper answers over HTTPS only."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cloudformation-response stand-in")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    (folder / "certificate.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return folder / "certificate.pem", folder / "key.pem"


@pytest.fixture
def response_url(certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[ResponseUrl]:
    received: list[Put] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(Put(self.path, self.headers.get("Content-Type"), json.loads(body)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(*certificate)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    # crhelper checks the server against the default trust store, which OpenSSL reads from here.
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield ResponseUrl(f"https://127.0.0.1:{server.server_port}{RESPONSE_PATH}", received)
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client: Any = boto3.client("s3")
        client.create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": os.environ["AWS_DEFAULT_REGION"]}
        )
        yield client


@pytest.fixture
def invoke(s3: Any, response_url: ResponseUrl, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Responses]:
    """Run the handler as CloudFormation would, with the layer downloads stubbed."""

    def run(
        request_type: str,
        layer: bytes = b"",
        physical_id: str | None = None,
        contracts_layer: bytes | None = None,
    ) -> Responses:
        layers = {GLUE_LAYER_ARN: layer, CONTRACTS_LAYER_ARN: contracts_layer or layer_zip(CONTRACTS_LAYER)}
        monkeypatch.setattr(glue_code_publisher, "download_layer", layers.__getitem__)
        event = {
            "RequestType": request_type,
            "ResourceProperties": {
                "LayerVersionArn": GLUE_LAYER_ARN,
                "ContractsLayerVersionArn": CONTRACTS_LAYER_ARN,
                "Bucket": BUCKET,
                "Prefix": "glue",
            },
            "StackId": STACK_ID,
            "RequestId": "request",
            "LogicalResourceId": "GlueCode",
            "ResponseURL": response_url.url,
        }
        if physical_id is not None:
            event["PhysicalResourceId"] = physical_id
        glue_code_publisher.handler(event, LambdaContext())
        return Responses(response_url.received)

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
        "MaintenanceScriptLocation": f"{folder}maintain_silver.py",
        "ExtraPyFiles": f"{folder}icetide_glue.zip",
    }
    assert _object(s3, answer["Data"]["ScriptLocation"]) == SCRIPT
    assert _object(s3, answer["Data"]["MaintenanceScriptLocation"]) == MAINTENANCE_SCRIPT
    assert set(zip_entries(_object(s3, answer["Data"]["ExtraPyFiles"]))) == set(PACKAGE_ENTRIES)


def test_changed_code_is_published_to_another_folder(invoke: Any) -> None:
    first = invoke("Create", layer_zip(GLUE_LAYER)).last["PhysicalResourceId"]
    changed = {**GLUE_LAYER, "python/icetide_glue/sql.py": b"MERGE = 'MERGE INTO silver'\n"}

    second = invoke("Update", layer_zip(changed), physical_id=first).last["PhysicalResourceId"]

    assert second != first


def test_changed_contracts_are_published_to_another_folder(invoke: Any) -> None:
    first = invoke("Create", layer_zip(GLUE_LAYER)).last["PhysicalResourceId"]
    module = "python/icetide_contracts/run_manifest.py"
    changed = {**CONTRACTS_LAYER, module: b"KEYS = ('runId', 'rowsRead')\n"}

    second = invoke("Update", layer_zip(GLUE_LAYER), physical_id=first, contracts_layer=layer_zip(changed))

    assert second.last["Status"] == "SUCCESS"
    assert second.last["PhysicalResourceId"] != first


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


def test_a_failed_create_leaves_an_id_that_the_following_delete_ignores(invoke: Any, s3: Any) -> None:
    without_package = {k: v for k, v in GLUE_LAYER.items() if not k.startswith("python/icetide_glue/")}
    failed = invoke("Create", layer_zip(without_package)).last["PhysicalResourceId"]

    # CloudFormation rolls a failed create back by deleting the resource under the id it was given.
    answer = invoke("Delete", physical_id=failed).last

    assert not failed.startswith("s3://")
    assert answer == {"Status": "SUCCESS", "PhysicalResourceId": failed, "Data": {}, "Reason": ""}
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_cloudformation_receives_the_answer_it_expects(invoke: Any, response_url: ResponseUrl) -> None:
    folder = invoke("Create", layer_zip(GLUE_LAYER)).last["PhysicalResourceId"]

    (put,) = response_url.received
    assert put.path == RESPONSE_PATH
    # The pre-signed URL is signed for an empty Content-Type.
    assert put.content_type == ""
    assert put.body == {
        "Status": "SUCCESS",
        "Reason": "",
        "PhysicalResourceId": folder,
        "StackId": STACK_ID,
        "RequestId": "request",
        "LogicalResourceId": "GlueCode",
        "Data": {
            "ScriptLocation": f"{folder}bronze_to_silver.py",
            "MaintenanceScriptLocation": f"{folder}maintain_silver.py",
            "ExtraPyFiles": f"{folder}icetide_glue.zip",
        },
        "NoEcho": False,
    }
