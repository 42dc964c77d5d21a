"""The state machines' definitions, with their DefinitionSubstitutions filled in.

In AWS, SAM fills the ``${...}`` placeholders of ``statemachine/table_run.asl.json`` (and of
``table_maintenance.asl.json``) from the template's ``DefinitionSubstitutions``;
``statemachine/substitutions.json`` lists the keys of both with a sample value each. The harness
does the same textual substitution, so moto executes exactly the file that is deployed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

STATEMACHINE_DIR = Path(__file__).resolve().parents[3] / "statemachine"
DEFINITION_PATH = STATEMACHINE_DIR / "table_run.asl.json"
MAINTENANCE_DEFINITION_PATH = STATEMACHINE_DIR / "table_maintenance.asl.json"
SUBSTITUTIONS_PATH = STATEMACHINE_DIR / "substitutions.json"
PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
FUNCTION_ARN_SUFFIX = "FunctionArn"


class SubstitutionError(ValueError):
    """A placeholder has no value, or a value would break the definition's JSON."""


def placeholders(text: str) -> set[str]:
    """The names of the ``${...}`` placeholders in ``text``."""
    return set(PLACEHOLDER.findall(text))


def load_substitutions(path: Path = SUBSTITUTIONS_PATH) -> dict[str, str]:
    """The keys and sample values of ``substitutions.json`` (every value a string, as SAM passes them)."""
    values = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(values, dict):
        raise SubstitutionError(f"{path} must hold a JSON object of placeholder name -> sample value")
    not_strings = sorted(key for key, value in values.items() if not isinstance(value, str))
    if not_strings:
        raise SubstitutionError(f"{path}: values must be strings (as SAM substitutes them): {not_strings}")
    return values


def handler_module(substitution_key: str) -> str:
    """The handler module a ``<Name>FunctionArn`` key stands for.

    ``AcquireLockFunctionArn`` -> ``acquire_lock``: template.yaml names its functions the same way.
    """
    if not substitution_key.endswith(FUNCTION_ARN_SUFFIX) or substitution_key == FUNCTION_ARN_SUFFIX:
        raise SubstitutionError(
            f"{substitution_key!r} does not name a Lambda function ARN (<Name>FunctionArn)"
        )
    name = substitution_key[: -len(FUNCTION_ARN_SUFFIX)]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def render_definition(values: Mapping[str, str], path: Path = DEFINITION_PATH) -> str:
    """The definition at ``path`` with every placeholder replaced by its value from ``values``."""
    text = path.read_text(encoding="utf-8")
    missing = sorted(placeholders(text) - set(values))
    if missing:
        raise SubstitutionError(f"no value for placeholder(s) {', '.join(missing)} of {path.name}")
    rendered = PLACEHOLDER.sub(lambda match: values[match.group(1)], text)
    try:
        json.loads(rendered)
    except json.JSONDecodeError as error:
        raise SubstitutionError(
            f"{path.name} is not JSON after substitution ({error}): a value holds a quote or backslash?"
        ) from None
    return rendered
