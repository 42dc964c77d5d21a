"""Publish the Glue jobs' scripts and a zip of its packages to S3 (custom resource GlueCode).

Why: `sam package` uploads a layer's content but has no property for a Glue job's --extra-py-files.
This custom resource copies the scripts (the merge job's and the maintenance job's) and the
icetide_glue package out of the Glue code layer, and
the icetide_contracts package (the contracts the job shares with the Lambdas) out of the contracts
layer, named in its properties, into a folder named after their content: one zip holds both
packages. So a change of either gives the job new locations (and CloudFormation deletes the old
folder after a successful update). crhelper answers CloudFormation, which otherwise waits an
hour for the resource: on success, on failure, and just before the function would time out.
"""

from __future__ import annotations

import functools
import hashlib
import io
import urllib.request
import zipfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import boto3
from crhelper import CfnResource

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

# Each Glue job's script, by the GlueCode attribute its job's ScriptLocation names.
SCRIPTS = {"ScriptLocation": "bronze_to_silver.py", "MaintenanceScriptLocation": "maintain_silver.py"}
PACKAGE = "icetide_glue"  # from the Glue code layer; it names the zip too
CONTRACTS_PACKAGE = "icetide_contracts"  # from the contracts layer
LAYER_ROOT = "python/"  # where a python3.x layer build puts the sources
# A fixed date makes the zip depend on the code only: same code, same folder.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)

# crhelper sets the root logger to log_level: its DEBUG default would log every event, pre-signed
# response URL included; failures are logged at ERROR with their traceback. A Delete is answered at
# once: each update of the Glue code deletes the previous folder, and waiting for the logs to flush
# would slow every deploy.
helper = CfnResource(log_level="WARNING", sleep_on_delete=0)

Event = dict[str, Any]
Step = Callable[[Event, Any], str | None]


class GlueCodeMissing(Exception):
    """The layer does not hold the Glue script or package (a build or ContentUri mistake)."""


class PublishFailed(Exception):
    """A step failed; the message names the original error, since CloudFormation shows only the text."""


def package_modules(layer: zipfile.ZipFile, package: str) -> dict[str, bytes]:
    """The `.py` files of `package` in a layer, by their name inside the package zip."""
    folder = f"{LAYER_ROOT}{package}/"
    names = [name for name in layer.namelist() if name.startswith(folder) and name.endswith(".py")]
    if f"{folder}__init__.py" not in names:
        raise GlueCodeMissing(f"the layer has no {folder}__init__.py")
    return {name[len(LAYER_ROOT) :]: layer.read(name) for name in names}


def glue_artifacts(glue_layer_zip: bytes, contracts_layer_zip: bytes) -> tuple[dict[str, bytes], bytes]:
    """({script name: bytes}, package zip bytes) taken from the bytes of the two layer zips."""
    with (
        zipfile.ZipFile(io.BytesIO(glue_layer_zip)) as glue_layer,
        zipfile.ZipFile(io.BytesIO(contracts_layer_zip)) as contracts_layer,
    ):
        for script in SCRIPTS.values():
            if LAYER_ROOT + script not in glue_layer.namelist():
                raise GlueCodeMissing(f"the layer has no {LAYER_ROOT}{script}")
        modules = package_modules(glue_layer, PACKAGE) | package_modules(contracts_layer, CONTRACTS_PACKAGE)
        package = io.BytesIO()
        with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, content in sorted(modules.items()):
                archive.writestr(zipfile.ZipInfo(name, date_time=ZIP_DATE), content, zipfile.ZIP_DEFLATED)
        scripts = {script: glue_layer.read(LAYER_ROOT + script) for script in SCRIPTS.values()}
        return scripts, package.getvalue()


def publish(
    s3: S3Client, bucket: str, prefix: str, glue_layer_zip: bytes, contracts_layer_zip: bytes
) -> tuple[dict[str, str], str]:
    """Upload scripts and package; returns (their s3:// locations, the folder's s3:// URI)."""
    scripts, package = glue_artifacts(glue_layer_zip, contracts_layer_zip)
    content = hashlib.sha256()
    for name in sorted(scripts):
        content.update(name.encode() + b"\0" + scripts[name] + b"\0")
    content.update(package)
    folder = f"{prefix.strip('/')}/{content.hexdigest()[:16]}"
    for name, script in scripts.items():
        s3.put_object(Bucket=bucket, Key=f"{folder}/{name}", Body=script)
    s3.put_object(Bucket=bucket, Key=f"{folder}/{PACKAGE}.zip", Body=package)
    locations = {attribute: f"s3://{bucket}/{folder}/{name}" for attribute, name in SCRIPTS.items()}
    locations["ExtraPyFiles"] = f"s3://{bucket}/{folder}/{PACKAGE}.zip"
    return locations, f"s3://{bucket}/{folder}/"


def unpublish(s3: S3Client, folder_uri: str) -> None:
    """Delete what publish wrote; a resource whose creation failed wrote nothing."""
    if not folder_uri.startswith("s3://"):
        return
    bucket, _, folder = folder_uri[len("s3://") :].partition("/")
    for name in (*SCRIPTS.values(), f"{PACKAGE}.zip"):
        s3.delete_object(Bucket=bucket, Key=folder + name)


def download_layer(layer_version_arn: str) -> bytes:
    """The bytes of a layer version's zip (a pre-signed URL that Lambda hands out)."""
    layer = boto3.client("lambda").get_layer_version_by_arn(Arn=layer_version_arn)
    # The URL is Lambda's own pre-signed https URL, not user input.
    with urllib.request.urlopen(layer["Content"]["Location"], timeout=60) as response:  # noqa: S310
        return bytes(response.read())


def _reason_names_the_error(step: Step) -> Step:
    """crhelper reports str(error) alone; "GlueCodeMissing: ..." says more than the message."""

    @functools.wraps(step)
    def run(event: Event, context: Any) -> str | None:
        try:
            return step(event, context)
        except Exception as error:
            raise PublishFailed(f"{type(error).__name__}: {error}") from error

    return run


@helper.create
@helper.update
@_reason_names_the_error
def publish_the_layers_code(event: Event, _context: Any) -> str:
    """Publish the layers' Glue code; the folder is the physical id, so new code replaces the resource."""
    properties = event["ResourceProperties"]
    glue_layer_zip = download_layer(properties["LayerVersionArn"])
    contracts_layer_zip = download_layer(properties["ContractsLayerVersionArn"])
    locations, folder = publish(
        boto3.client("s3"), properties["Bucket"], properties["Prefix"], glue_layer_zip, contracts_layer_zip
    )
    helper.Data.update(locations)
    return folder


@helper.delete
@_reason_names_the_error
def unpublish_the_folder(event: Event, _context: Any) -> None:
    unpublish(boto3.client("s3"), event["PhysicalResourceId"])


def handler(event: Event, context: Any) -> None:
    """The Lambda entry point: crhelper calls the step for the request type and answers CloudFormation."""
    helper(event, context)
