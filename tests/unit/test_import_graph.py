"""The import graph: no cycle anywhere, and the deployed code never imports local/ or cli/.

grimp builds the graph from the source of every package on the pytest `pythonpath` (the roots Lambda,
Glue, the custom resource, the CLI and the local stack import from), so a package added there is
checked without editing this file. Every import statement counts: one inside a function (a lazy
import still ties the two modules together, it only hides it) and one under TYPE_CHECKING too.

A cycle is looked for at two levels: between modules, and between the children of every package
(`icetide.control` importing `icetide.dms` while `icetide.dms` imports `icetide.control` is a cycle
even when no single module imports itself back). The top-level packages count as the children of
one root, so `icetide_local` and `icetide_cli` may not import each other either.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[2]
# Code that runs in AWS (Lambda, the custom resource, Glue) must not reach the local stand-ins or the
# CLI: neither is deployed, and the local differences live in local/ only.
DEPLOYED_ROOTS = ("contracts", "functions", "glue_jobs", "deploy/glue_code_publisher")
NOT_DEPLOYED_ROOTS = ("local", "cli")


def source_roots() -> list[Path]:
    """The pytest `pythonpath` without the tests: where our importable code lives."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    paths = config["tool"]["pytest"]["ini_options"]["pythonpath"]
    return [REPO / path for path in paths if path != "tests"]


def top_level_names(root: Path) -> tuple[set[str], dict[str, Path]]:
    """The packages under `root`, and its single-file modules (scripts such as the Glue entrypoint)."""
    packages = {child.name for child in root.iterdir() if (child / "__init__.py").is_file()}
    scripts = {child.stem: child for child in root.glob("*.py")}
    return packages, scripts


def add_script(graph: grimp.ImportGraph, name: str, path: Path) -> None:
    """Add a single-file module and its imports of modules already in `graph` (grimp reads packages only).

    A script has no package, so its imports are absolute; `from a import b` imports the module `a.b`
    when there is one, else `a`.
    """
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    graph.add_module(name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            module = nearest_module(graph, target)
            if module is not None and module != name:
                graph.add_import(
                    importer=name,
                    imported=module,
                    line_number=node.lineno,
                    line_contents=ast.get_source_segment(source, node) or "",
                )


def nearest_module(graph: grimp.ImportGraph, dotted: str) -> str | None:
    """`dotted` or its longest prefix that is a module in `graph`; None for other packages' modules."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in graph.modules:
            return candidate
    return None


@cache
def project_graph() -> tuple[grimp.ImportGraph, frozenset[str]]:
    """The graph of all our code, and the names of its top-level packages and scripts."""
    packages: set[str] = set()
    scripts: dict[str, Path] = {}
    for root in source_roots():
        root_packages, root_scripts = top_level_names(root)
        packages |= root_packages
        scripts |= root_scripts
    graph = grimp.build_graph(*sorted(packages), cache_dir=None)
    for name in scripts:
        graph.add_module(name)
    for name, path in sorted(scripts.items()):
        add_script(graph, name, path)
    return graph, frozenset(packages | set(scripts))


def names_under(roots: Iterable[str]) -> set[str]:
    names: set[str] = set()
    for root in roots:
        packages, scripts = top_level_names(REPO / root)
        names |= packages | set(scripts)
    return names


def module_cycles(graph: grimp.ImportGraph) -> set[tuple[str, ...]]:
    """The import cycles of `graph`: for each import `a -> b` that leads back to `a`, the shortest cycle.

    A cycle is written from its alphabetically first module, so each is reported once.
    """
    cycles: set[tuple[str, ...]] = set()
    for importer in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycle = (importer, *back[:-1])
                start = cycle.index(min(cycle))
                cycles.add(cycle[start:] + cycle[:start])
    return cycles


def sibling_cycles(graph: grimp.ImportGraph, children: set[str]) -> set[tuple[str, ...]]:
    """The cycles between `children` (sibling packages or modules), each taken with its descendants.

    They are the module cycles of the squashed graph, whose import `a -> b` means that some module in
    `a` imports one in `b`.
    """

    def child_of(module: str) -> str | None:
        return next((c for c in children if module == c or module.startswith(c + ".")), None)

    squashed = grimp.ImportGraph()
    for child in children:
        squashed.add_module(child)
    for child in children:
        for module in {child} | graph.find_descendants(child):
            for imported in graph.find_modules_directly_imported_by(module):
                other = child_of(imported)
                if other is not None and other != child:
                    squashed.add_import(importer=child, imported=other)
    return module_cycles(squashed)


def package_cycles(graph: grimp.ImportGraph, top_level: Iterable[str]) -> set[tuple[str, ...]]:
    """The cycles between the children of every package, the top-level names being the root's children."""
    parents: list[set[str]] = [set(top_level)]
    parents += [graph.find_children(module) for module in sorted(graph.modules)]
    return {cycle for children in parents if len(children) > 1 for cycle in sibling_cycles(graph, children)}


def forbidden_chains(graph: grimp.ImportGraph, sources: Iterable[str], targets: Iterable[str]) -> list[str]:
    """Each import chain from a module in `sources` to one in `targets`, as `a -> b -> c`."""
    found = []
    for source in sorted(sources):
        for target in sorted(targets):
            chains = graph.find_shortest_chains(importer=source, imported=target, as_packages=True)
            found += [" -> ".join(chain) for chain in sorted(chains)]
    return found


def _cycle_lines(cycles: Iterable[Iterable[str]]) -> str:
    return "\n".join(" -> ".join([*cycle, next(iter(cycle))]) for cycle in cycles)


# --- the project ---------------------------------------------------------------------------------


def test_the_graph_holds_every_part_of_the_project():
    """The checks below are only as good as the graph: every root's code is in it, scripts too."""
    graph, top_level = project_graph()
    assert {"icetide", "handlers", "icetide_glue", "icetide_contracts", "icetide_cli"} <= top_level
    assert "icetide_local" in top_level
    assert {"bronze_to_silver", "glue_code_publisher"} <= top_level
    assert graph.direct_import_exists(importer="handlers.commit_watermark", imported="icetide.run.commit")
    assert graph.direct_import_exists(importer="bronze_to_silver", imported="icetide_glue.job")
    assert graph.direct_import_exists(importer="icetide_glue.job", imported="icetide_contracts.run_manifest")


def test_no_module_imports_itself_back():
    graph, _ = project_graph()
    cycles = sorted(module_cycles(graph))
    assert not cycles, f"import cycles between modules:\n{_cycle_lines(cycles)}"


def test_no_package_imports_its_siblings_back():
    graph, top_level = project_graph()
    cycles = sorted(package_cycles(graph, top_level))
    assert not cycles, f"import cycles between sibling packages:\n{_cycle_lines(cycles)}"


def test_deployed_code_imports_neither_local_nor_cli():
    graph, _ = project_graph()
    deployed, not_deployed = names_under(DEPLOYED_ROOTS), names_under(NOT_DEPLOYED_ROOTS)
    assert deployed and not_deployed
    chains = forbidden_chains(graph, deployed, not_deployed)
    assert not chains, "deployed code imports local/ or cli/:\n" + "\n".join(chains)


# --- the checks themselves, on small graphs made here ---------------------------------------------


def _graph(*imports: str) -> grimp.ImportGraph:
    """A graph from `"a.b -> c.d"` lines; every parent package of a module is added too."""
    graph = grimp.ImportGraph()
    for line in imports:
        importer, imported = (name.strip() for name in line.split("->"))
        for module in (importer, imported):
            parts = module.split(".")
            for end in range(1, len(parts) + 1):
                graph.add_module(".".join(parts[:end]))
        graph.add_import(importer=importer, imported=imported)
    return graph


def test_module_cycles_finds_a_lazy_two_module_cycle_and_a_longer_one_once():
    graph = _graph("cli.tables -> cli.put", "cli.put -> cli.tables", "x.a -> x.b", "x.b -> x.c", "x.c -> x.a")
    assert module_cycles(graph) == {("cli.put", "cli.tables"), ("x.a", "x.b", "x.c")}
    assert module_cycles(_graph("cli.tables -> cli.put", "x.a -> x.b")) == set()


def test_package_cycles_finds_sibling_packages_that_import_each_other_without_a_module_cycle():
    # control.model -> dms.operators and dms.identifiers -> control.model: no module imports itself
    # back, but the packages control and dms import each other.
    graph = _graph(
        "app.control.model -> app.dms.operators",
        "app.dms.identifiers -> app.control.model",
        "app.run.plan -> app.dms.identifiers",
    )
    assert module_cycles(graph) == set()
    assert package_cycles(graph, ["app"]) == {("app.control", "app.dms")}
    acyclic = _graph("app.dms.identifiers -> app.control.model", "app.run.plan -> app.dms.identifiers")
    assert package_cycles(acyclic, ["app"]) == set()


def test_package_cycles_counts_the_top_level_packages_as_siblings():
    graph = _graph("local.stack -> cli.tables", "cli.local -> local.workspace")
    assert package_cycles(graph, ["local", "cli"]) == {("cli", "local")}


def test_forbidden_chains_finds_direct_and_indirect_imports():
    graph = _graph("glue.entry -> local.spark", "functions.a -> shared.b", "shared.b -> cli.main")
    assert forbidden_chains(graph, ["glue", "functions"], ["local", "cli"]) == [
        "functions.a -> shared.b -> cli.main",
        "glue.entry -> local.spark",
    ]
    assert forbidden_chains(graph, ["cli"], ["glue"]) == []


def test_grimp_counts_imports_inside_functions_and_under_type_checking(tmp_path, monkeypatch):
    package = tmp_path / "lazy_app"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "spark.py").write_text("", encoding="utf-8")
    (package / "types.py").write_text("", encoding="utf-8")
    (package / "job.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from lazy_app import types\n"
        "def run():\n"
        "    from lazy_app.spark import session\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))  # grimp finds a package where Python would
    graph = grimp.build_graph("lazy_app", cache_dir=None)
    assert graph.find_modules_directly_imported_by("lazy_app.job") == {"lazy_app.spark", "lazy_app.types"}


def test_add_script_counts_imports_inside_functions(tmp_path):
    script = tmp_path / "entry.py"
    script.write_text(
        "import json\n"
        "from app import job\n"
        "def main():\n"
        "    from local.spark import session\n"
        "    import app.other.deep\n",
        encoding="utf-8",
    )
    graph = _graph("app.job -> app.other", "local.spark -> app.job")
    add_script(graph, "entry", script)
    assert graph.find_modules_directly_imported_by("entry") == {"app.job", "local.spark", "app.other"}


@pytest.mark.parametrize("root", DEPLOYED_ROOTS + NOT_DEPLOYED_ROOTS)
def test_each_checked_root_is_on_the_pythonpath(root):
    assert REPO / root in source_roots()
