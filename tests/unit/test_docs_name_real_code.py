"""Every repository path and module name the documentation puts in backticks names real code.

A page that names a moved or renamed file sends its reader nowhere; this test reads each page's
inline code spans (fenced blocks are commands and output, left alone) and checks two kinds:

- a repository path: a span with a ``/`` ending in one of :data:`PATH_SUFFIXES`, or starting with a
  top-level directory of the repository (in a command, each of its words that starts with one).
  One starting with a top-level directory must exist there; a shorter one (``standins/glue.py``,
  named inside the page about its package) must be the tail of a repository file or directory.
  A pytest node id (``tests/x.py::test_y``) names its file, and the test in it.
- a dotted name under one of :data:`PACKAGES`: the longest prefix that is a module is found with
  :func:`importlib.util.find_spec` (only packages are imported, for their ``__path__``: their
  ``__init__`` files import nothing heavy); the rest must be defined in that module's source,
  read with :mod:`ast`, never imported (a job module imports pyspark).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from unit.repository_files import REPO_ROOT, repository_files

PAGES = [
    *sorted((REPO_ROOT / "docs").glob("*.md")),
    *sorted((REPO_ROOT / "docs" / "benchmarks").glob("*.md")),
    REPO_ROOT / "README.md",
]
PATH_SUFFIXES = (".py", ".json", ".yaml", ".md", ".toml")
PACKAGES = ("icetide_glue", "icetide", "icetide_contracts", "icetide_local", "icetide_cli", "handlers")

SPAN = re.compile(r"`([^`\n]+)`")
# A dotted name not inside a longer one (``DIR/logs/handlers.log``, ``spark.x.icetide.y``) and not a
# snapshot property or tag that only starts like one (``icetide.run-id``).
DOTTED = re.compile(r"(?<![\w./-])(?:" + "|".join(PACKAGES) + r")(?:\.\w+)+(?![-\w])")
# Placeholders, globs and elisions: a pattern of paths, not one path.
PATTERN_MARKS = ("<", ">", "{", "}", "*", "$", "…", "...", "[")


@dataclass(frozen=True)
class Finding:
    page: str
    line: int
    missing: str
    why: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: `{self.missing}` {self.why}"


def code_spans(text: str) -> Iterator[tuple[int, str]]:
    """(line number, span) for each inline code span outside fenced blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            for span in SPAN.findall(line):
                yield number, span


@cache
def top_level_directories(root: Path) -> frozenset[str]:
    return frozenset(name.split("/", 1)[0] for name in repository_files(root) if "/" in name)


@cache
def repository_paths(root: Path) -> frozenset[str]:
    """Every file of the repository and every directory holding one, directories ending in ``/``."""
    paths: set[str] = set()
    for name in repository_files(root):
        paths.add(name)
        parts = name.split("/")
        paths.update("/".join(parts[:end]) + "/" for end in range(1, len(parts)))
    return frozenset(paths)


def repository_path(span: str, root: Path) -> tuple[str, str | None] | None:
    """(file or directory, test name or None) when ``span`` names one repository path; None when it
    is not a path or names a pattern of them."""
    path, _, test = span.partition("::")
    if " " in path or "://" in path or any(mark in path for mark in PATTERN_MARKS):
        return None
    # ``tests/glue/frames.py:assert_frame_equal`` names a file and a name in it.
    if not test and path.count(":") == 1 and path.split(":", 1)[0].endswith(".py"):
        path, test = path.split(":", 1)
    # Outside the repository (``../shared/design.md``) or of the machine, not of the code.
    if path.startswith(("../", "/", "~")):
        return None
    first = path.split("/", 1)[0]
    if first.isupper():
        return None  # a placeholder folder: DIR/state/…, RAW/…
    starts_at_top = "/" in path and first in top_level_directories(root)
    looks_like_file = "/" in path and path.endswith(PATH_SUFFIXES)
    if not (starts_at_top or looks_like_file):
        return None
    return path, (test.split("[", 1)[0].replace("::", ".") or None)


def path_candidates(span: str, root: Path) -> list[str]:
    """The span, or in a command (``.venv/bin/python -m pytest tests/glue -q``) its words that start
    with a top-level directory: a command's other words are options and values, not paths."""
    words = span.split()
    if len(words) == 1:
        return words
    tops = tuple(f"{name}/" for name in top_level_directories(root))
    return [word for word in words if word.startswith(tops)]


def path_finding(path: str, test: str | None, root: Path) -> str | None:
    """Why ``path`` (and ``test`` in it) names nothing, or None when it names something."""
    known = repository_paths(root)
    wanted = path if path.endswith("/") or path in known else path.rstrip("/")
    if path.split("/", 1)[0] in top_level_directories(root):
        if wanted not in known and wanted + "/" not in known:
            return "is not a file or directory of the repository"
        found = wanted if wanted in known else wanted + "/"
    else:
        tails = [name for name in known if name.endswith("/" + wanted) or name.endswith("/" + wanted + "/")]
        if not tails:
            return "is not the end of any repository path"
        found = tails[0]
    if test is not None:
        if not found.endswith(".py"):
            return f"names {test!r} in a file that is not Python"
        if test not in defined_names(root / found, test.split(".", 1)[0]):
            return f"names {test!r}, which {found} does not define"
    return None


def defined_names(source: Path, first: str) -> set[str]:
    """Dotted names defined in ``source`` whose first part is ``first``: the module's top-level
    definitions and imports, and the members of its classes (methods, fields, enum members)."""
    return {name for name in module_names(source) if name.split(".", 1)[0] == first}


@cache
def module_names(source: Path) -> frozenset[str]:
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    names: set[str] = set()
    for node in _top_level(tree.body):
        names.update(_bound(node))
        if isinstance(node, ast.ClassDef):
            for member in _top_level(node.body):
                names.update(f"{node.name}.{name}" for name in _bound(member))
    return frozenset(names)


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a body, those inside its ``if`` and ``try`` blocks included."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top_level(block)


def _bound(node: ast.stmt) -> Iterator[str]:
    """The names a statement binds."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
        yield node.target.id
    elif isinstance(node, ast.Import | ast.ImportFrom):
        yield from ((alias.asname or alias.name).split(".", 1)[0] for alias in node.names)


def dotted_finding(name: str) -> str | None:
    """Why ``name`` resolves to no module and no name defined in one, or None when it does."""
    parts = name.split(".")
    spec = importlib.util.find_spec(parts[0])
    if spec is None:
        return "is not an importable package"
    module = parts[0]
    used = 1
    # Down packages while the next part is a submodule; a plain module is never imported.
    while used < len(parts) and spec.submodule_search_locations is not None:
        found = importlib.util.find_spec(f"{module}.{parts[used]}")
        if found is None:
            break
        spec, module, used = found, f"{module}.{parts[used]}", used + 1
    rest = parts[used:]
    if not rest:
        return None
    if spec.origin is None or not spec.origin.endswith(".py"):
        return f"is not a module, and {module} has no source to define {'.'.join(rest)} in"
    # A name and one member of it (``Class.method``) are checked; deeper parts are the member's own.
    checked = ".".join(rest[:2])
    names = defined_names(Path(spec.origin), rest[0])
    if checked in names or (len(rest) > 1 and rest[0] in names and not _is_class(spec.origin, rest[0])):
        return None
    return f"is not a module, and {module} defines no {checked}"


def _is_class(origin: str, name: str) -> bool:
    return any(member.startswith(name + ".") for member in module_names(Path(origin)))


def page_findings(page: Path, root: Path = REPO_ROOT) -> list[Finding]:
    """What the page names in backticks that does not exist."""
    shown = str(page.relative_to(root)) if page.is_relative_to(root) else str(page)
    findings = []
    for line, span in code_spans(page.read_text(encoding="utf-8")):
        for candidate in path_candidates(span, root):
            named = repository_path(candidate, root)
            if named is not None:
                why = path_finding(*named, root)
                if why is not None:
                    findings.append(Finding(shown, line, candidate, why))
        for name in DOTTED.findall(span):
            why = dotted_finding(name)
            if why is not None:
                findings.append(Finding(shown, line, name, why))
    return findings


def test_a_page_naming_gone_code_is_reported_at_its_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "\n".join(
            [
                "Real: `glue_jobs/icetide_glue/merge/plan.py`, `icetide_glue.merge.plan.choose_merge_plan`,",
                "`icetide_glue.merge.plan.MergePlan.DRIVER`, `tests/unit/test_docs_name_real_code.py::"
                "test_a_page_naming_gone_code_is_reported_at_its_line`, `standins/glue.py`, `docs/`.",
                "Patterns, not paths: `<schema>/<table>/`, `s3://RAW/x/y.json`, `statemachine/*.asl.json`,",
                "`DIR/state/runs.json`, `../shared/design.md`, `icetide.run-id`, `DIR/logs/handlers.log`.",
                "A command: `.venv/bin/python -m pytest tests/glue -q`, `pytest tests/gone -k x`.",
                "```",
                "glue_jobs/icetide_glue/gone_in_a_fence.py `glue_jobs/icetide_glue/gone_in_a_fence.py`",
                "```",
                "Gone: `glue_jobs/icetide_glue/driver_merge.py` and `icetide_glue.planned_scan`,",
                "`icetide_glue.merge.plan.DRIVER_MERGE_PATH`, `icetide_glue.merge.plan.MergePlan.BOTH`,",
                "`tests/unit/test_docs_name_real_code.py::test_that_never_was`, `standins/gone.py`.",
            ]
        ),
        encoding="utf-8",
    )

    found = [(f.line, f.missing) for f in page_findings(page)]

    assert found == [
        (5, "tests/gone"),
        (9, "glue_jobs/icetide_glue/driver_merge.py"),
        (9, "icetide_glue.planned_scan"),
        (10, "icetide_glue.merge.plan.DRIVER_MERGE_PATH"),
        (10, "icetide_glue.merge.plan.MergePlan.BOTH"),
        (11, "tests/unit/test_docs_name_real_code.py::test_that_never_was"),
        (11, "standins/gone.py"),
    ]
    assert str(page_findings(page)[1]) == (
        f"{page}:9: `glue_jobs/icetide_glue/driver_merge.py` is not a file or directory of the repository"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO_ROOT)))
def test_every_path_and_module_a_page_names_exists(page: Path) -> None:
    findings = page_findings(page)

    assert not findings, "names of code that does not exist:\n" + "\n".join(map(str, findings))
