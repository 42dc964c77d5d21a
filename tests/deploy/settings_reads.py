"""Which icetide settings a handler reads, found in its source (and the icetide modules it imports).

Handlers read their environment only through ``icetide.settings``: ``settings = load_settings()``
then ``settings.<field>`` or ``settings.require("<field>")``, or a helper taking ``settings:
Settings``. Reading the source finds exactly those reads, without calling a handler (which would
need AWS). Building the settings object itself also demands every field without a default.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from icetide.settings import Settings

SETTINGS_FIELDS = frozenset(Settings.model_fields)
REQUIRED_FIELDS = frozenset(name for name, field in Settings.model_fields.items() if field.is_required())
# Only our own code can read our settings; imports of other packages are not followed.
_OWN_PACKAGES = ("icetide", "handlers")


def _module_source(module_name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(module_name)
    except ModuleNotFoundError:
        return None  # `from package.module import Name`: Name is not a module
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).read_text(encoding="utf-8")


def _imported_modules(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            # `from icetide.run import locking` imports the module icetide.run.locking.
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] in _OWN_PACKAGES}


def _is_settings_annotation(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Name):
        return annotation.id == "Settings"
    return isinstance(annotation, ast.Constant) and annotation.value == "Settings"


def _calls_load_settings(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name == "load_settings"


def _settings_names(tree: ast.Module) -> set[str]:
    """Names that hold a Settings object: assigned from load_settings(), or parameters typed Settings."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _calls_load_settings(node.value):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.arg) and _is_settings_annotation(node.annotation):
            names.add(node.arg)
    return names


def _fields_read(tree: ast.Module) -> set[str]:
    holders = _settings_names(tree)
    read: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in holders
            and node.attr in SETTINGS_FIELDS
        ):
            read.add(node.attr)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "require"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in holders
        ):
            read.update(
                arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            )
    if any(_calls_load_settings(node) for node in ast.walk(tree) if isinstance(node, ast.Call)):
        read |= REQUIRED_FIELDS
    return read


def settings_read_by(module_name: str) -> set[str]:
    """Settings fields read by ``module_name`` and every icetide/handlers module it imports."""
    pending, seen, read = [module_name], set(), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        source = _module_source(name)
        if source is None:
            continue
        tree = ast.parse(source)
        read |= _fields_read(tree)
        pending.extend(_imported_modules(tree) - seen)
    unknown = read - SETTINGS_FIELDS
    if unknown:
        raise ValueError(f"{module_name} requires settings that icetide.settings does not define: {unknown}")
    return read
