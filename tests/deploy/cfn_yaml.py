"""Reading template.yaml as data: a YAML loader that understands CloudFormation's short tags.

`!Ref X` becomes ``{"Ref": "X"}``, `!GetAtt A.B` becomes ``{"Fn::GetAtt": ["A", "B"]}`` and every
other `!Tag` becomes ``{"Fn::Tag": ...}``: the long forms CloudFormation itself uses, so tests can
walk the template without caring which form a line was written in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

# Every short-form intrinsic function and condition function CloudFormation accepts in YAML.
_FUNCTION_TAGS = (
    "And",
    "Base64",
    "Cidr",
    "Equals",
    "FindInMap",
    "GetAZs",
    "GetAtt",
    "If",
    "ImportValue",
    "Join",
    "Length",
    "Not",
    "Or",
    "Select",
    "Split",
    "Sub",
    "ToJsonString",
    "Transform",
)


class CloudFormationLoader(yaml.SafeLoader):
    """SafeLoader plus CloudFormation's `!Ref`, `!Condition` and `!<Function>` tags."""


def _node_value(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


def _function(name: str) -> Any:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        value = _node_value(loader, node)
        if name == "GetAtt" and isinstance(value, str):
            # The short form "Resource.Attribute" is the list form split at the first dot.
            value = value.split(".", 1)
        return {f"Fn::{name}": value}

    return construct


def _keyword(key: str) -> Any:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        return {key: _node_value(loader, node)}

    return construct


CloudFormationLoader.add_constructor("!Ref", _keyword("Ref"))
CloudFormationLoader.add_constructor("!Condition", _keyword("Condition"))
for _tag in _FUNCTION_TAGS:
    CloudFormationLoader.add_constructor(f"!{_tag}", _function(_tag))


def load_template(path: Path) -> dict[str, Any]:
    """The template at ``path`` as plain dicts and lists, intrinsic functions in their long form."""
    with path.open(encoding="utf-8") as stream:
        loaded = yaml.load(stream, Loader=CloudFormationLoader)  # noqa: S506 - a SafeLoader subclass
    if not isinstance(loaded, dict) or "Resources" not in loaded:
        raise ValueError(f"{path} is not a CloudFormation template (no Resources section)")
    return loaded
