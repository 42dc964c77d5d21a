"""docs/README.md indexes every page under docs/, and the documentation's relative links resolve.

A link is Markdown's ``[text](target)``; a target with a scheme (``https:``, ``mailto:``) or only
an anchor (``#section``) is not a file and is left alone; an anchor after a file name is dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = REPO_ROOT / "docs"
INDEX = DOCS / "README.md"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def relative_links(page: str) -> list[str]:
    """The file targets of a page's links, anchors dropped; external links and bare anchors skipped."""
    targets = []
    for target in LINK.findall(page):
        if EXTERNAL.match(target) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def unresolved_links(page_path: Path) -> list[str]:
    """The links of a page that point at nothing, as ``page: target``."""
    page = page_path.read_text(encoding="utf-8")
    return [
        f"{page_path.relative_to(REPO_ROOT)}: {target}"
        for target in relative_links(page)
        if not (page_path.parent / target).exists()
    ]


def unindexed_pages(docs: Path, index: Path) -> list[str]:
    """The .md files under ``docs`` (the index itself excepted) the index does not link."""
    targets = relative_links(index.read_text(encoding="utf-8"))
    linked = {(index.parent / target).resolve() for target in targets}
    return sorted(
        str(page.relative_to(docs))
        for page in docs.rglob("*.md")
        if page.resolve() != index.resolve() and page.resolve() not in linked
    )


def test_the_checkers_see_a_missing_page_and_a_broken_link(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n", encoding="utf-8")
    (docs / "sub" / "b.md").write_text("# B\n", encoding="utf-8")
    index = docs / "README.md"
    index.write_text(
        "- [a](a.md#top): A\n- [site](https://example.com)\n- [gone](gone.md)\n- [here](#docs)\n",
        encoding="utf-8",
    )

    assert unindexed_pages(docs, index) == ["sub/b.md"]
    assert relative_links(index.read_text(encoding="utf-8")) == ["a.md", "gone.md"]
    assert not (docs / "gone.md").exists()


def test_docs_readme_links_every_page_under_docs() -> None:
    missing = unindexed_pages(DOCS, INDEX)

    assert missing == [], f"docs/README.md has no line for: {', '.join(missing)}"


@pytest.mark.parametrize(
    "page",
    [REPO_ROOT / "README.md", REPO_ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))],
    ids=lambda page: str(page.relative_to(REPO_ROOT)),
)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = unresolved_links(page)

    assert broken == [], "\n".join(broken)
