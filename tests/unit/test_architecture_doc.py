"""docs/architecture.md is the one description of the layout, and it matches the tree.

The page has two tables, under "## Top-level directories" and "## Python packages"; the first cell
of each row names a directory in backticks (`` `functions/icetide/run/` ``). The check:

- every directory the page names exists;
- every top-level directory of the repository (one holding a file git tracks, or a new file git
  does not ignore; hidden ones excluded) is named in the first table;
- every Python package (a directory with ``__init__.py``, at any depth, outside ``tests/`` and
  outside hidden and build directories) is named in the second.

:func:`layout_problems` is the checker; it is shown failing on a small tree of its own, then run on
the repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import pytest

from unit.repository_files import REPO_ROOT, repository_files

TOP_LEVEL = "Top-level directories"
PACKAGES = "Python packages"
# Directories whose packages are not part of the layout: build output and the tests' own helpers.
NOT_LAYOUT = frozenset({"tests", "build", "dist", "node_modules", "__pycache__"})
FIRST_CELL = re.compile(r"^\|\s*`([^`]+?)/?`\s*\|")


def named_directories(page: str) -> dict[str, set[str]]:
    """The directories the page's two tables name, by section title."""
    named: dict[str, set[str]] = {TOP_LEVEL: set(), PACKAGES: set()}
    section = ""
    for line in page.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif section in named and (match := FIRST_CELL.match(line)):
            named[section].add(match.group(1).rstrip("/"))
    return named


def _hidden_or_build(part: str) -> bool:
    return part.startswith(".") or part in NOT_LAYOUT or part.endswith(".egg-info")


def existing_layout(files: Iterable[str]) -> tuple[set[str], set[str]]:
    """Top-level directories and packages of a tree, from its files' paths relative to the root."""
    top_level: set[str] = set()
    packages: set[str] = set()
    for name in files:
        path = PurePosixPath(name)
        if len(path.parts) < 2 or path.parts[0].startswith("."):
            continue
        top_level.add(path.parts[0])
        if path.name == "__init__.py" and not any(_hidden_or_build(part) for part in path.parts[:-1]):
            packages.add(str(path.parent))
    return top_level, packages


def layout_problems(root: Path, files: Iterable[str], page: str) -> list[str]:
    """What the page and the tree under ``root`` disagree on, one sentence each (empty: they agree)."""
    named = named_directories(page)
    top_level, packages = existing_layout(files)
    problems = [
        f"docs/architecture.md names {directory}/, which does not exist"
        for directory in sorted(named[TOP_LEVEL] | named[PACKAGES])
        if not (root / directory).is_dir()
    ]
    problems += [
        f"top-level directory {directory}/ has no line under '## {TOP_LEVEL}' in docs/architecture.md"
        for directory in sorted(top_level - named[TOP_LEVEL])
    ]
    problems += [
        f"package {package}/ has no line under '## {PACKAGES}' in docs/architecture.md"
        for package in sorted(packages - named[PACKAGES])
    ]
    return problems


PAGE = """# Architecture

## Top-level directories

| directory | what it owns |
|---|---|
| `app/` | the application |
| `tests/` | the tests |

## Python packages

| package | imported as | what it owns |
|---|---|---|
| `app/core/` | `core` | the core |
"""


def make_tree(root: Path, files: Iterable[str]) -> list[str]:
    names = list(files)
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("", encoding="utf-8")
    return names


BASE_TREE = (
    "app/core/__init__.py",
    "app/core/model.py",
    "tests/unit/__init__.py",
    ".ci/run",
    "app/build/lib/copied/__init__.py",
    "app/.hidden/pkg/__init__.py",
    "README.md",
)


def test_a_tree_the_page_describes_has_no_problems(tmp_path: Path) -> None:
    files = make_tree(tmp_path, BASE_TREE)

    assert layout_problems(tmp_path, files, PAGE) == []


def test_a_top_level_directory_added_without_a_line_fails(tmp_path: Path) -> None:
    files = make_tree(tmp_path, (*BASE_TREE, "tools/fetch.sh"))

    assert layout_problems(tmp_path, files, PAGE) == [
        "top-level directory tools/ has no line under '## Top-level directories' in docs/architecture.md"
    ]


def test_a_package_added_at_any_depth_without_a_line_fails(tmp_path: Path) -> None:
    files = make_tree(tmp_path, (*BASE_TREE, "app/core/driver/arrow/__init__.py"))

    assert layout_problems(tmp_path, files, PAGE) == [
        "package app/core/driver/arrow/ has no line under '## Python packages' in docs/architecture.md"
    ]


def test_a_line_for_a_directory_that_is_gone_fails(tmp_path: Path) -> None:
    files = make_tree(tmp_path, BASE_TREE)
    page = PAGE + "| `app/old/` | `old` | removed long ago |\n"

    assert layout_problems(tmp_path, files, page) == [
        "docs/architecture.md names app/old/, which does not exist"
    ]


def test_a_package_named_only_as_a_top_level_directory_is_not_described(tmp_path: Path) -> None:
    files = make_tree(tmp_path, (*BASE_TREE, "lib/__init__.py"))
    page = PAGE.replace("| `tests/` |", "| `lib/` | a library |\n| `tests/` |")

    assert layout_problems(tmp_path, files, page) == [
        "package lib/ has no line under '## Python packages' in docs/architecture.md"
    ]


def test_docs_architecture_describes_the_repository() -> None:
    page = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    problems = layout_problems(REPO_ROOT, repository_files(REPO_ROOT), page)

    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("section", [TOP_LEVEL, PACKAGES])
def test_the_page_has_both_tables(section: str) -> None:
    page = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")

    assert named_directories(page)[section], f"docs/architecture.md has no rows under '## {section}'"
