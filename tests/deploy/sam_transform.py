"""Print template.yaml as CloudFormation's AWS::Serverless transform makes it (JSON on stdout).

Run with the Python of .venv-sam (samtranslator lives there, beside aws-sam-cli's pins), from the
repository root. `sam validate --lint` does not translate the template, so a property the transform
refuses (an unknown event property, say) passes it and fails only at deploy; this finds it offline.
Local code locations are replaced by S3 URIs first, as `sam package` would.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

_LOCAL_URIS = ("CodeUri", "ContentUri", "DefinitionUri")


class _NoManagedPolicies:
    """The transform looks AWS managed policies up by name; the template names none."""

    def load(self) -> dict[str, str]:
        return {}


def _packaged(document: dict[str, Any]) -> dict[str, Any]:
    for name, resource in document["Resources"].items():
        properties = resource.get("Properties", {})
        for key in _LOCAL_URIS:
            if isinstance(properties.get(key), str):
                properties[key] = f"s3://packaged-artifacts/{name}/{key}"
    code_uri = document.get("Globals", {}).get("Function", {})
    if isinstance(code_uri.get("CodeUri"), str):
        code_uri["CodeUri"] = "s3://packaged-artifacts/functions"
    return document


def main(path: str) -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
    document = _packaged(yaml_parse(Path(path).read_text(encoding="utf-8")))
    json.dump(transform(document, {}, _NoManagedPolicies()), sys.stdout, default=str)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "template.yaml")
