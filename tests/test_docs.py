"""The documentation's commands and the site's navigation (README.md, docs/*.md, mkdocs.yml).

Every ``mneia`` command a ```bash, ```sh or ```console block shows is parsed by
the real command line parser (``mneia.cli.parser``), so that a renamed
subcommand or option cannot leave the pages behind. A block is read as a shell
reads it, just far enough to find its commands: quotes (a GraphQL document
over several lines), ``\\`` at the end of a line, comments (``#>`` output
lines included), ``$(...)`` (the command inside is one too), and ``|``,
``&&``, ``;`` and redirections, which end a command. ``$VARS`` and
``<placeholders>`` stand for a value, and ``[--option VALUE]`` in a synopsis
for the option. Nothing is run here.

What runs them: every section holding commands is in ``RUN_BY``, with the
test that runs its blocks (pasted beside a real server, run against a scratch
database, or, for the benchmarks, which take minutes to hours, parsed by the
benchmark's own parser), or in ``NOT_RUN`` with the reason. A new block in
neither fails.

And every page of docs/ is in mkdocs.yml's nav, which names no page that is
not there. ``mkdocs build --strict`` in .ci/run fails on that too, but the
suite runs without the docs extra, so the nav is read here with PyYAML when
it is installed and by pattern when it is not.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import re
import shlex
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from mneia import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
SHELLS = ("bash", "sh", "console")
VALUE = "1"
"""What a ``$VAR`` or a ``<placeholder>`` stands for: a valid port, count, name and path alike."""

FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
PLACEHOLDER = re.compile(r"<(?=[^\s<>'\"])[^<>\n]*(?<=[^\s<>'\"])>")
SYNOPSIS = re.compile(r"\[(-[^\[\]\n]*)\]")
ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
NAME = re.compile(r"[A-Za-z_]\w*|[0-9?#@*$!-]")


def shell_blocks(text: str) -> Iterator[tuple[int, str, str]]:
    """Each ```bash/```sh/```console block: the line number of its first line, its language, its text."""
    lines = text.split("\n")
    number = 0
    while number < len(lines):
        opening = FENCE.match(lines[number])
        number += 1
        if not opening:
            continue
        fence, language = opening.groups()
        first, body = number + 1, []
        while number < len(lines) and not lines[number].strip().startswith(fence):
            body.append(lines[number])
            number += 1
        number += 1
        if language in SHELLS:
            yield first, language, "\n".join(body)


def runnable(language: str, block: str) -> str:
    """What a shell would be given: the ``$ `` prompts removed, and a console block's output lines
    (those without a prompt) left blank, so that line numbers stay the page's."""
    lines = block.split("\n")
    if language == "console":
        return "\n".join(line.lstrip()[2:] if line.lstrip().startswith("$ ") else "" for line in lines)
    return "\n".join(re.sub(r"^(\s*)\$ ", r"\1", line) for line in lines)


class _Block:
    """A block's text scanned for its commands, each with the line it starts on."""

    def __init__(self, text: str, first_line: int) -> None:
        self.text, self.first_line, self.at = text, first_line, 0
        self.commands: list[tuple[int, list[str]]] = []

    def line(self, at: int) -> int:
        return self.first_line + self.text.count("\n", 0, at)

    def substitution(self) -> str:
        """``$(...)`` at ``self.at`` (past ``$(``): its commands are found too; it stands for a value."""
        self.scan(nested=True)
        return VALUE

    def variable(self) -> str:
        """``$NAME`` or ``${...}`` at ``self.at`` (on ``$``), skipped: it stands for a value."""
        text = self.text
        if text.startswith("${", self.at):
            end = text.find("}", self.at)
            self.at = len(text) if end < 0 else end + 1
            return VALUE
        name = NAME.match(text, self.at + 1)
        if name is None:
            self.at += 1
            return "$"
        self.at = name.end()
        return VALUE

    def double_quoted(self) -> str:
        text, out = self.text, []
        self.at += 1
        while self.at < len(text) and text[self.at] != '"':
            char = text[self.at]
            if char == "\\" and self.at + 1 < len(text):
                out.append(text[self.at + 1])
                self.at += 2
            elif text.startswith("$(", self.at):
                self.at += 2
                out.append(self.substitution())
            elif char == "$":
                out.append(self.variable())
            else:
                out.append(char)
                self.at += 1
        self.at += 1
        return "".join(out)

    def scan(self, nested: bool = False) -> None:
        text = self.text
        words: list[str] = []
        word: str | None = None
        start = 0

        def add(part: str, at: int) -> None:
            nonlocal word, start
            if word is None and not words:
                start = self.line(at)
            word = (word or "") + part

        def end_word() -> None:
            nonlocal word
            if word is not None:
                words.append(word)
                word = None

        def end_command() -> None:
            end_word()
            if words:
                self.commands.append((start, words.copy()))
            words.clear()

        while self.at < len(text):
            at, char = self.at, text[self.at]
            if char == "\\" and text.startswith("\n", at + 1):
                self.at += 2  # a line continued
            elif char == "\\" and at + 1 < len(text):
                add(text[at + 1], at)
                self.at += 2
            elif char == "'":
                end = text.find("'", at + 1)
                end = len(text) if end < 0 else end
                add(text[at + 1 : end], at)
                self.at = end + 1
            elif char == '"':
                add(self.double_quoted(), at)
            elif text.startswith("$(", at):
                self.at += 2
                add(self.substitution(), at)
            elif char == "$":
                add(self.variable(), at)
            elif char == "#" and word is None:
                end = text.find("\n", at)
                self.at = len(text) if end < 0 else end  # a comment, to the end of its line
            elif char in " \t":
                end_word()
                self.at += 1
            elif char in "<>" and word is not None and word.isdigit():
                word = None  # 2>file: the descriptor is no argument
                end_command()
                self.at += 1
            elif char in "\n;|&<>()":
                end_command()
                self.at += 1
                if char == ")" and nested:
                    return
            else:
                add(char, at)
                self.at += 1
        end_command()


def commands(block: str, first_line: int = 1) -> list[tuple[int, list[str]]]:
    """The commands a shell block runs, each as the line it starts on and its words."""
    text = SYNOPSIS.sub(r"\1", PLACEHOLDER.sub(VALUE, block))
    scanned = _Block(text, first_line)
    scanned.scan()
    return sorted(scanned.commands, key=lambda found: found[0])


def mneia_arguments(words: list[str]) -> list[str] | None:
    """The arguments of a ``mneia`` command (after ``VAR=value`` assignments), or None for another."""
    while words and ASSIGNMENT.match(words[0]):
        words = words[1:]
    if words and Path(words[0]).name == "mneia":
        return words[1:]
    return None


def refusal(arguments: list[str]) -> str | None:
    """What the real parser says of these arguments, or None when it takes them."""
    said = io.StringIO()
    try:
        with redirect_stderr(said), redirect_stdout(io.StringIO()):
            cli.parser().parse_args(arguments)
    except SystemExit as exc:  # argparse's error(), or --help and --version (status 0)
        if exc.code not in (0, None):
            lines = said.getvalue().strip().splitlines()
            return lines[-1] if lines else f"exit status {exc.code}"
    return None


def unparsed(name: str, text: str) -> list[str]:
    """Every ``mneia`` command of a page's shell blocks that the parser refuses, with where and why."""
    failures = []
    for first_line, language, block in shell_blocks(text):
        for line, words in commands(runnable(language, block), first_line):
            arguments = mneia_arguments(words)
            if arguments is None:
                continue
            why = refusal(arguments)
            if why is not None:
                failures.append(f"{name}:{line}: mneia {shlex.join(arguments)}: {why}")
    return failures


def shown_commands(text: str) -> int:
    return sum(
        mneia_arguments(words) is not None
        for first_line, language, block in shell_blocks(text)
        for _, words in commands(runnable(language, block), first_line)
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_mneia_command_shown_parses(page: Path) -> None:
    name = page.relative_to(ROOT).as_posix()
    failures = unparsed(name, page.read_text(encoding="utf-8"))
    assert not failures, "the real parser refuses:\n" + "\n".join(failures)


def test_the_docs_show_commands() -> None:
    """The check above has something to check: the pages' commands are found."""
    assert sum(shown_commands(page.read_text(encoding="utf-8")) for page in PAGES) >= 15


def test_a_wrong_option_or_command_is_reported() -> None:
    """The control: a page whose commands the parser refuses fails, naming file, line and reason."""
    page = "\n".join(
        [
            "# A page",
            "",
            "```bash",
            "mneia serve --port 8000   # fine",
            "MNEIA_TOKEN=$TOKEN .venv/bin/mneia export --project <name> --bogus > out.jsonl",
            "```",
            "",
            "```console",
            "$ mneia servee",
            "mneia: this is output, not a command --nor-this",
            "```",
        ]
    )
    failures = unparsed("control.md", page)
    assert len(failures) == 2, failures
    assert failures[0].startswith("control.md:5: mneia export --project 1 --bogus: ")
    assert "unrecognized arguments: --bogus" in failures[0]
    assert failures[1].startswith("control.md:9: mneia servee: ")
    assert "invalid choice: 'servee'" in failures[1]


def test_commands_are_found_as_a_shell_finds_them() -> None:
    block = "\n".join(
        [
            ". .venv/bin/activate",
            "A=$(mneia gql 'mutation {",
            '  createProject(name: "payments") { id } }\' \\',
            "  --get createProject.id)",
            '#> {"a": 1}',
            'mneia export --project "$P" > out.jsonl && mneia schema | head -3',
            "mneia backup mneia.dump [--data-dir DIR] [--json]  # a synopsis",
        ]
    )
    assert commands(block, 10) == [
        (10, [".", ".venv/bin/activate"]),
        (
            11,
            [
                "mneia",
                "gql",
                'mutation {\n  createProject(name: "payments") { id } }',
                "--get",
                "createProject.id",
            ],
        ),
        (11, ["A=1"]),
        (15, ["mneia", "export", "--project", "1"]),
        (15, ["out.jsonl"]),
        (15, ["mneia", "schema"]),
        (15, ["head", "-3"]),
        (16, ["mneia", "backup", "mneia.dump", "--data-dir", "DIR", "--json"]),
    ]
    assert mneia_arguments(["MNEIA_TOKEN=1", "/usr/local/bin/mneia", "mcp"]) == ["mcp"]
    assert mneia_arguments(["claude", "mcp", "add", "mneia", "--", "mneia", "mcp"]) is None


# --- the nav ---------------------------------------------------------------------------------------

NAV_ENTRY = re.compile(r"^\s*-\s+(?:[^\n]*?:\s+)?([\w./-]+\.md)\s*$", re.M)


def nav_leaves(nav: Any) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_leaves(value)
    elif isinstance(nav, list):
        for entry in nav:
            yield from nav_leaves(entry)


def nav_pages(config: str) -> set[str]:
    """The pages mkdocs.yml's nav names; without PyYAML (the docs extra brings it), read by pattern."""
    try:
        import yaml
    except ImportError:
        return set(NAV_ENTRY.findall(config.partition("\nnav:")[2]))
    return {page for page in nav_leaves(yaml.safe_load(config)["nav"]) if page.endswith(".md")}


# --- which test runs each block --------------------------------------------------------------------

RUN_BY = {
    ("README.md", "## Start"): (
        "tests/test_cli.py::test_serve_with_the_embedded_server_and_a_bootstrap_beside_it"
    ),
    ("README.md", "## Install and test"): "tests/test_cli.py::test_ci_runs_the_readme_install_and_test_line",
    ("README.md", "## A five-minute walkthrough"): (
        "tests/test_readme.py::test_readme_shell_walkthrough_pastes_as_shown"
    ),
    ("docs/api.md", "## A five-minute walkthrough"): (
        "tests/test_readme.py::test_the_pages_first_requests_paste_as_shown"
    ),
    ("docs/index.md", "## Start"): "tests/test_readme.py::test_the_pages_first_requests_paste_as_shown",
    ("docs/index.md", "## Install and test"): "tests/test_docs.py::test_the_install_lines_are_the_readmes",
    ("docs/operations.md", "## Install and test"): (
        "tests/test_docs.py::test_the_install_lines_are_the_readmes"
    ),
    ("docs/capture.md", "## Quick start"): (
        "tests/test_readme.py::test_capture_and_export_quick_starts_paste_as_shown"
    ),
    ("docs/export.md", "## Quick start"): (
        "tests/test_readme.py::test_capture_and_export_quick_starts_paste_as_shown"
    ),
    ("docs/backup.md", "## A server you run yourself"): (
        "tests/test_backup.py::test_the_pages_own_tools_procedure_runs_as_written"
    ),
    ("docs/performance.md", "## Earlier measurements"): (
        "tests/test_docs.py::test_every_benchmark_command_shown_parses"
    ),
    ("docs/performance.md", "## Throughput under concurrent load"): (
        "tests/test_docs.py::test_every_benchmark_command_shown_parses"
    ),
    (
        "docs/performance.md",
        "## A lighter request: `benchmarks/request.py` and `benchmarks/throughput.py` (issue 24, part 4)",
    ): "tests/test_docs.py::test_every_benchmark_command_shown_parses",
    ("docs/rehydration.md", "## The benchmark"): (
        "tests/test_docs.py::test_every_benchmark_command_shown_parses"
    ),
    (
        "docs/performance.md",
        "## Scale out: plain PostgreSQL against Citus, routed (`benchmarks/scale_out.py`, issue 25)",
    ): "tests/test_docs.py::test_every_benchmark_command_shown_parses",
    (
        "docs/scale-out.md",
        "## What exists",
    ): "tests/test_citus_script.py::test_the_pages_commands_run_as_written",
}
"""Each section whose shell blocks a test runs, and the test: pasted into bash beside a real server
(the walkthroughs), run as written against a scratch database (backup), launched as the client would
(MCP), compared with what CI runs (the install lines) or, for the benchmarks, which take minutes to
hours, parsed by the benchmark's own parser."""

NOT_RUN = {
    ("docs/mcp.md", "(before any section)"): (
        "needs Claude Code's `claude`, not installed here: tests/test_mcp_config.py checks the two lines"
        " word by word, and launches the configurations they write as each client would"
    ),
    ("docs/backup.md", "## The embedded server (`mneia serve` with no `DATABASE_URL`)"): (
        "drops a database whose name the reader copies from what `mneia restore` printed"
    ),
    ("docs/capture.md", "## Hooks"): "the quick start runs the same command; these are its variants",
    ("docs/capture.md", "## Importing sessions"): (
        "the reader's own clients' directories (~/.codex, ~/.gemini); the quick start imports a real"
        " Claude Code session, and tests/test_import.py each client's transcripts"
    ),
    ("docs/capture.md", "## Importing decision logs and rules"): (
        "the quick start runs both importers on files of its own; these name the reader's"
    ),
    ("docs/scale-out.md", "## Regions"): (
        "names the reader's own servers and passwords; tests/test_regions.py runs the same commands"
        " (migrate --region with the directory, bootstrap --region, serve --region, serve with"
        " MNEIA_REGIONS) against two local servers"
    ),
}
"""Sections whose blocks no test runs as written, and why. Their ``mneia`` commands still parse
(test_every_mneia_command_shown_parses)."""


def sections_with_commands() -> set[tuple[str, str]]:
    """(page, the ``## `` heading above it) of every shell block of the README and docs/."""
    found = set()
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").split("\n")
        for first_line, _, _ in shell_blocks("\n".join(lines)):
            above = (line for line in reversed(lines[: first_line - 1]) if line.startswith("## "))
            found.add((page.relative_to(ROOT).as_posix(), next(above, "(before any section)")))
    return found


def test_every_command_block_is_run_or_says_why_not() -> None:
    """A new block of commands belongs to a section a named test runs, or is listed with its reason;
    and neither list names a section that holds no commands, or a test that does not exist."""
    shown = sections_with_commands()
    assert shown - RUN_BY.keys() - NOT_RUN.keys() == set(), "blocks no test runs and no reason given"
    assert (RUN_BY.keys() | NOT_RUN.keys()) - shown == set(), "listed sections without commands"
    assert not RUN_BY.keys() & NOT_RUN.keys()
    for test in set(RUN_BY.values()):
        path, name = test.split("::")
        assert re.search(rf"^(async )?def {name}\(", (ROOT / path).read_text(), re.M), test


def test_the_install_lines_are_the_readmes() -> None:
    """docs/index.md and docs/operations.md show the README's install-and-test line, which CI runs."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (line,) = [block for _, _, block in shell_blocks(readme) if "pytest" in block]
    for page in ("index.md", "operations.md"):
        blocks = [block for _, _, block in shell_blocks((DOCS / page).read_text(encoding="utf-8"))]
        assert line in blocks, page


BENCHMARK = re.compile(r"^(?:[A-Z_]+=\S+\s+)*\.venv/bin/python (benchmarks/\w+\.py)((?: [^#\n]*)?)", re.M)


class _Parsed(Exception):
    """Raised by the patched parse_args once the arguments parsed: the benchmark stops before any work."""


def _parses(script: Path, arguments: list[str]) -> str | None:
    """None when ``script``'s own parser takes ``arguments``, else what it said."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    sys.path.insert(0, str(script.parent))
    try:
        spec.loader.exec_module(module)
        original = argparse.ArgumentParser.parse_args

        def parse_then_stop(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
            original(self, *args, **kwargs)
            raise _Parsed

        said = io.StringIO()
        argparse.ArgumentParser.parse_args = parse_then_stop  # type: ignore[method-assign]
        try:
            with redirect_stderr(said), redirect_stdout(io.StringIO()):
                module.main(arguments)
        except _Parsed:
            return None
        except SystemExit:
            return said.getvalue().strip().splitlines()[-1]
        finally:
            argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]
        return "main() returned without parsing its arguments"
    finally:
        sys.path.remove(str(script.parent))
        for name, loaded in list(sys.modules.items()):  # the benchmark and its siblings (common, …)
            if Path(getattr(loaded, "__file__", None) or "/").parent == script.parent:
                del sys.modules[name]


def benchmark_commands(text: str) -> list[tuple[str, list[str]]]:
    """Each ``.venv/bin/python benchmarks/X.py ARGS`` a shell block shows (continued lines joined)."""
    found = []
    for _, _, block in shell_blocks(text):
        for match in BENCHMARK.finditer(block.replace("\\\n", " ")):
            found.append((match.group(1), shlex.split(match.group(2))))
    return found


def test_every_benchmark_command_shown_parses() -> None:
    """Each benchmark command the pages show is taken by that benchmark's own argument parser (it
    stops there: the runs take minutes to hours), and a wrong option is refused (the control)."""
    shown = [command for page in PAGES for command in benchmark_commands(page.read_text(encoding="utf-8"))]
    assert len(shown) >= 10, shown
    refused = [
        f"{script} {shlex.join(arguments)}: {why}"
        for script, arguments in shown
        if (why := _parses(ROOT / script, arguments)) is not None
    ]
    assert refused == []
    control = _parses(ROOT / "benchmarks/throughput.py", ["--bogus"])
    assert control is not None and "unrecognized arguments: --bogus" in control


def test_every_page_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^docs_dir:\s*docs\s*$", config, re.M)
    pages = {page.relative_to(DOCS).as_posix() for page in DOCS.rglob("*.md")}
    named = nav_pages(config)
    assert not pages - named, f"pages left out of mkdocs.yml's nav: {sorted(pages - named)}"
    assert not named - pages, f"mkdocs.yml's nav names pages that do not exist: {sorted(named - pages)}"


def test_the_nav_reads_the_same_without_yaml() -> None:
    yaml = pytest.importorskip("yaml")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    by_pattern = set(NAV_ENTRY.findall(config.partition("\nnav:")[2]))
    assert by_pattern == set(nav_leaves(yaml.safe_load(config)["nav"]))


# The README is read on GitHub, not built by MkDocs: its links are checked here, as --strict checks the
# site's (a file that exists, and a heading of that file for an anchor).
LINK = re.compile(r"\]\((?!https?://|mailto:)([^)\s#]*)(?:#([^)\s]+))?\)")
HEADING = re.compile(r"^#{1,6} +(.+?)\s*$", re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def broken_links(page: Path) -> list[str]:
    broken = []
    for target, anchor in LINK.findall(page.read_text()):
        linked = (page.parent / target).resolve() if target else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in {slug(h) for h in HEADING.findall(linked.read_text())}:
            broken.append(f"{target}#{anchor}: no such heading")
    return broken


def test_the_readme_links_resolve() -> None:
    assert LINK.findall((ROOT / "README.md").read_text()), "the README links to the docs"
    assert broken_links(ROOT / "README.md") == []


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# There\n\n## Install and test\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md#install-and-test) [gone](missing.md) [anchor](there.md#nowhere) [web](https://x.y/z)\n"
    )
    assert broken_links(page) == ["missing.md: no such file", "there.md#nowhere: no such heading"]
    assert slug("Time: what was believed then") == "time-what-was-believed-then"
