"""Comments and docstrings say why the code is as it is today: no benchmark rounds, no measured times.

A comment that cites "the eighteenth round" or "0.37-0.44 s against 0.49-0.61 s" tells the history
of a change, which git keeps, and goes stale with the next machine or the next run. The reason the
code holds today belongs in the comment; the measurement in docs/benchmarks/ and the history in
git and CHANGELOG.md.

What is scanned: every comment (``tokenize``) and docstring (``ast``: module, class and function
docstrings) of every Python file git tracks, and the ``#`` comments of YAML, TOML files and the
Makefile. What is flagged, each a regular expression below:

- ``ROUND``: a benchmark round by its ordinal, "fourth round" and beyond ("eighteenth round",
  "twenty-first round", "the nineteenth and twentieth rounds"). The benchmarks themselves repeat
  each measurement in rounds, so "the first round's batch" of a benchmark's own loop (first to
  third) is not flagged; any ordinal round is flagged when the same sentence cites a benchmark
  document or an issue ("docs/benchmarks/merge-cost.md, ninth round", "issue 12, second round").
- ``BENCH_RUN``: a numbered benchmark run ("run 27 of make bench", "benchmark run 20").
- ``MEASURED``: a measured time, that is a duration quoted as a result:
  a range of durations ("0.37-0.44 s", "15-20 ms"), an approximate one ("~0.4 s"), a duration
  with decimals ("2.03 s", "0.1 s": constants are whole numbers of a unit or written in code), a
  duration compared with another ("13.3 vs 13.5 s", "12 s against 9 s"), a duration something
  "took" or "ran in", and a speed-up factor ("2.1x faster", also with the sign for times).

This file is not scanned: its docstring and examples quote what the rules catch.

Not flagged: a whole-number duration that states a setting or a bound ("timeout 900 s", "waits 30
seconds", "at most 115 minutes"), since that is what the code does, not what a machine measured.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

from unit.repository_files import REPO_ROOT, repository_files

THIS_FILE = Path(__file__).resolve().relative_to(REPO_ROOT).as_posix()

_LATER_ORDINALS = (
    "fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|"
    "fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth|"
    r"(?:twenty|thirty)[- ](?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)"
)
_ANY_ORDINAL = "first|second|third|" + _LATER_ORDINALS
_ROUNDS = rf"(?:(?:{{ordinals}})(?:,?\s+(?:and\s+)?(?:{_ANY_ORDINAL}))*)\s+rounds?\b"
_UNIT = r"(?:ms|µs|s|sec|seconds?|min|minutes?|h|hours?)\b"
_DURATION = rf"\d+(?:\.\d+)?\s*{_UNIT}"

ROUND = re.compile(
    rf"\b{_ROUNDS.format(ordinals=_LATER_ORDINALS)}"
    rf"|(?:merge-cost\.md|docs/benchmarks\S*|issue\s+\d+)[^.;]{{0,40}}?\b{_ROUNDS.format(ordinals=_ANY_ORDINAL)}",
    re.IGNORECASE,
)
BENCH_RUN = re.compile(
    r"\b(?:benchmark|bench)\s+runs?\s+\d+|\bruns?\s+\d+(?:\s*(?:and|-)\s*\d+)?\s+of\s+(?:make\s+)?bench",
    re.IGNORECASE,
)
MEASURED = re.compile(
    "|".join(
        (
            rf"\d+(?:\.\d+)?\s*[-\u2013]\s*{_DURATION}",  # a range (hyphen or en dash): 0.37-0.44 s, 15-20 ms
            rf"~\s*{_DURATION}",  # an approximation: ~0.4 s
            rf"\b\d+\.\d+\s*{_UNIT}",  # decimals: 2.03 s, 0.1 s
            rf"\d+(?:\.\d+)?\s*(?:{_UNIT})?\s*(?:vs\.?|versus|against)\s+{_DURATION}",  # 13.3 vs 13.5 s
            rf"{_DURATION}\s+(?:vs\.?|versus|against)\s+\d",  # 12 s against 9 s
            rf"\b(?:took|ran in)\s+(?:about\s+|only\s+|under\s+|over\s+)?{_DURATION}",  # took 15 minutes
            r"\d+(?:\.\d+)?\s*[\u00d7x]\s+(?:faster|slower)",  # 2.1x faster, with x or the sign
        )
    ),
    re.IGNORECASE,
)
RULES = {"benchmark round": ROUND, "benchmark run": BENCH_RUN, "measured time": MEASURED}


def findings(text: str) -> Iterator[tuple[int, str, str]]:
    """(line offset within ``text``, rule, matched words) for each rule a comment's text breaks.

    A sentence may wrap across comment lines, so the text is searched whole and each match is
    reported at the line where it starts.
    """
    for rule, pattern in RULES.items():
        for match in pattern.finditer(text):
            yield text.count("\n", 0, match.start()), rule, " ".join(match.group(0).split())


def python_comments(source: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of each block of consecutive ``#`` comments and of each docstring."""
    block: list[str] = []
    start = 0
    previous = -1
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            line = token.start[0]
            if block and line != previous + 1:
                yield start, "\n".join(block)
                block = []
            if not block:
                start = line
            block.append(token.string.lstrip("#").strip())
            previous = line
    if block:
        yield start, "\n".join(block)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                yield first.lineno, first.value.value


def hash_comments(text: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of each block of consecutive ``#`` comments of a YAML, TOML or Makefile.

    A ``#`` inside quotes is not a comment (YAML and TOML strings: checkov's suppression reasons).
    """
    block: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        comment = _comment_of(line)
        if comment is None:
            if block:
                yield start, "\n".join(block)
                block = []
            continue
        if not block:
            start = number
        block.append(comment)
    if block:
        yield start, "\n".join(block)


def _comment_of(line: str) -> str | None:
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[index + 1 :].strip()
    return None


# A line's leading comment marker: removed, every comment block of a file is one stretch of the rest.
_COMMENT_MARKER = re.compile(r"^[ \t]*#+[ \t]*", re.MULTILINE)


def may_have_findings(text: str) -> bool:
    """False when no comment or docstring of ``text`` can break a rule: every block
    :func:`python_comments` or :func:`hash_comments` yields reads, markers aside, as a stretch of
    ``text`` without its lines' leading ``#``, and the rules' spaces match any whitespace. Finding
    nothing in the whole text spares the tokenizer and the parser most files."""
    return next(findings(_COMMENT_MARKER.sub("", text)), None) is not None


def file_findings(path: str, text: str) -> list[str]:
    """``path:line: rule: words`` for each finding in one file's comments and docstrings."""
    if not may_have_findings(text):
        return []
    blocks = python_comments(text) if path.endswith(".py") else hash_comments(text)
    return [
        f"{path}:{start + offset}: {rule}: {words!r}"
        for start, block in blocks
        for offset, rule, words in findings(block)
    ]


def scanned_files() -> list[str]:
    return sorted(
        name
        for name in repository_files()
        if name != THIS_FILE
        and (name.endswith((".py", ".yaml", ".yml", ".toml")) or Path(name).name == "Makefile")
    )


SAMPLE = '''"""Small merges on the driver.

The Spark path took 3.4-3.7 s for it where a reload takes 8-10 s
(docs/benchmarks/merge-cost.md, eighteenth round).
"""

TIMEOUT_SECONDS = 900  # a Glue run is stopped after 900 s; waits 30 seconds between looks


def key_ranges() -> None:
    # collected as a list, which hashes none of them (200,000 keys: 0.37-0.44 s
    # against 0.49-0.61 s for the aggregate's job, scratch)
    """One sorted array; the first round's batch of the benchmark's own loop."""
'''


def test_a_sample_with_a_round_and_measured_times_is_flagged_line_by_line() -> None:
    found = file_findings("sample.py", SAMPLE)

    assert "sample.py:4: benchmark round: 'docs/benchmarks/merge-cost.md, eighteenth round'" in found
    assert "sample.py:3: measured time: '3.4-3.7 s'" in found
    assert "sample.py:3: measured time: '8-10 s'" in found
    assert "sample.py:11: measured time: '0.37-0.44 s'" in found
    assert "sample.py:12: measured time: '0.49-0.61 s'" in found
    assert not [line for line in found if ":7:" in line or ":13:" in line], found


@pytest.mark.parametrize(
    "text",
    [
        "the nineteenth and twentieth rounds",
        "Issue 12, seventh round.",
        "twenty-first round",
        "run 27 of make bench",
        "0.37-0.44 s against 0.49-0.61 s",
        "took 15.8 minutes",
        "in 15.8 minutes against 24.0 for one",
        "13.3 vs 13.5 s",
        "~0.07 s a run",
        "the classification statement 2.1\u00d7 faster",
        "15\u201320 s each",
        "30-60 ms a run",
    ],
)
def test_history_and_timings_are_flagged(text: str) -> None:
    assert list(findings(text)), text


@pytest.mark.parametrize(
    "text",
    [
        "timeout 900 s",
        "waits 30 seconds between looks",
        "at most 115 minutes: the state machine gives up after 120 minutes",
        "the first round's batch, before the first round",
        "run 1 reads n <= 1000; run 2 starts at the watermark",
        "the lock the run took at its start",
        "CDC_STOP_AFTER_SECONDS, default 300, 1-3600",
        "a 1 % batch of 200,000 keys",
    ],
)
def test_settings_bounds_and_plain_words_are_not_flagged(text: str) -> None:
    assert not list(findings(text)), text


def test_yaml_and_makefile_comments_are_read_and_strings_are_not() -> None:
    text = 'a: 1  # took 15.8 minutes\nb: "x # 2.5 s vs 3 s"\n# the eighteenth round\n'

    assert file_findings("t.yaml", text) == [
        "t.yaml:1: measured time: 'took 15.8 minutes'",
        "t.yaml:3: benchmark round: 'eighteenth round'",
    ]


def test_no_comment_or_docstring_names_a_benchmark_round_or_a_measured_time() -> None:
    found = [
        finding
        for name in scanned_files()
        for finding in file_findings(name, (REPO_ROOT / name).read_text(encoding="utf-8"))
    ]

    assert found == [], "\n".join(found)


def test_a_finding_wrapped_across_comment_lines_passes_the_quick_look() -> None:
    text = "x = 1  # the merge took 15\n    # minutes, the reload\n"

    assert file_findings("t.py", text) == ["t.py:1: measured time: 'took 15 minutes'"]
