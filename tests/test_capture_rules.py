"""The rules-file reader of ``mneia.capture.rules`` (CLAUDE.md, AGENTS.md, .claude/rules,
.cursor/rules, .cursorrules), on small synthetic projects. Pure: no database, no server."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mneia.capture import rules
from mneia.capture.record import Capture, NotASource, Origin

CLAUDE = """\
# Project

This is a Python project.

@docs/architecture.md
@~/.claude/my-preferences.md

## Code style

- Use ruff for formatting.
- Prefer small functions
  that do one thing.
- Testing:
  - run pytest with -x
  - never mock the database
- Migrations are reversible
  - test the downgrade too
1. Always run `make lint` before committing
2) Keep **commit messages** short

```bash
- not a rule
make test
```

<!-- a comment
- hidden -->

| command | what |
|---------|------|
| make    | all  |
"""


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def statements(capture: Capture) -> list[str]:
    return [c.statement for c in capture.claims]


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if needle in line)


def test_bullets_kinds_lines_headings(tmp_path: Path) -> None:
    write(tmp_path, "CLAUDE.md", CLAUDE)
    capture = rules.read([tmp_path / "CLAUDE.md"], root=tmp_path)
    assert capture.origin is Origin.DOCUMENT and capture.session is None
    assert statements(capture) == [
        "Use ruff for formatting.",
        "Prefer small functions that do one thing.",
        "Testing: run pytest with -x",
        "Testing: never mock the database",
        "Migrations are reversible",
        "test the downgrade too",
        "Always run `make lint` before committing",
        "Keep commit messages short",
    ]
    kinds = {c.statement: c.kind for c in capture.claims}
    assert kinds["Prefer small functions that do one thing."] == "PREFERENCE"
    assert kinds["Testing: never mock the database"] == "CONSTRAINT"
    assert kinds["Use ruff for formatting."] == "CONSTRAINT"
    basis = {c.statement: c.basis for c in capture.claims}
    assert (
        basis["Prefer small functions that do one thing."] == f"CLAUDE.md:{line_of(CLAUDE, 'Prefer small')}"
    )
    assert basis["Testing: never mock the database"] == f"CLAUDE.md:{line_of(CLAUDE, 'never mock')}"
    assert basis["Keep commit messages short"] == f"CLAUDE.md:{line_of(CLAUDE, 'commit messages')}"
    assert {c.details for c in capture.claims} == {"Project > Code style"}
    assert all(c.said_at is None and c.valid_from is None for c in capture.claims)


def test_skipped_imports_code_tables_paragraphs(tmp_path: Path) -> None:
    write(tmp_path, "CLAUDE.md", CLAUDE)
    capture = rules.read([tmp_path / "CLAUDE.md"], root=tmp_path)
    assert capture.skipped == {"import": 2, "code": 1, "table": 1, "paragraph beside bullets": 1}
    assert not any("not a rule" in s or "hidden" in s or "@" in s for s in statements(capture))


def test_key_is_text_hash_under_the_document(tmp_path: Path) -> None:
    path = write(tmp_path, "AGENTS.md", "- Never push to main.\n")
    claim = rules.read([path], root=tmp_path).claims[0]
    digest = hashlib.sha256(b"Never push to main.").hexdigest()[:16]
    assert claim.key == f"rules:AGENTS.md:{digest}"
    assert rules.document(path, root=tmp_path) == "rules:AGENTS.md"
    assert claim.key.rsplit(":", 1)[0] == rules.document(path, root=tmp_path)


def test_keys_stable_across_moves_and_edits(tmp_path: Path) -> None:
    path = write(tmp_path, "AGENTS.md", "- Never push to main.\n- Use uv.\n")
    before = {c.statement: c.key for c in rules.read([path], root=tmp_path).claims}
    write(
        tmp_path,
        "AGENTS.md",
        "# Rules\n\n* Use   uv.\n\n\n- Write tests first.\n-   Never push\n    to main.\n",
    )
    after = {c.statement: c.key for c in rules.read([path], root=tmp_path).claims}
    assert after["Never push to main."] == before["Never push to main."]  # moved, re-wrapped
    assert after["Use uv."] == before["Use uv."]
    write(tmp_path, "AGENTS.md", "- Never push to main or release.\n")
    edited = rules.read([path], root=tmp_path).claims[0]
    assert edited.key != before["Never push to main."]
    assert edited.key.startswith("rules:AGENTS.md:")


def test_same_rule_in_two_files_two_keys(tmp_path: Path) -> None:
    write(tmp_path, "CLAUDE.md", "- Use uv.\n")
    write(tmp_path, "AGENTS.md", "- Use uv.\n- Use uv.\n")
    capture = rules.read([tmp_path], root=tmp_path)
    assert [c.basis for c in capture.claims] == ["CLAUDE.md:1", "AGENTS.md:1"]
    assert capture.skipped["duplicate rule"] == 1


def test_paragraphs_when_no_bullets(tmp_path: Path) -> None:
    text = "You are an expert in Go.\n\nAlways handle errors\nexplicitly.\n\n\nPrefer the standard library.\n"
    capture = rules.read([write(tmp_path, ".cursorrules", text)], root=tmp_path)
    assert statements(capture) == [
        "You are an expert in Go.",
        "Always handle errors explicitly.",
        "Prefer the standard library.",
    ]
    assert [c.basis for c in capture.claims] == [".cursorrules:1", ".cursorrules:3", ".cursorrules:7"]
    assert [c.kind for c in capture.claims] == ["CONSTRAINT", "CONSTRAINT", "PREFERENCE"]


def test_a_paragraph_leading_a_list(tmp_path: Path) -> None:
    text = "Before committing:\n\n- run the tests\n- run the linter\n\nOther prose.\n"
    capture = rules.read([write(tmp_path, "AGENTS.md", text)], root=tmp_path)
    assert statements(capture) == ["Before committing: run the tests", "Before committing: run the linter"]
    assert capture.skipped == {"paragraph beside bullets": 1}


def test_cursor_mdc_front_matter(tmp_path: Path) -> None:
    text = (
        "---\ndescription: TypeScript conventions\nglobs: *.ts, *.tsx\nalwaysApply: false\n---\n"
        "# TypeScript\n\n- Use named exports.\n- Consider zod for validation.\n"
    )
    path = write(tmp_path, ".cursor/rules/typescript.mdc", text)
    capture = rules.read([path], root=tmp_path)
    first, second = capture.claims
    assert first.key.startswith("rules:.cursor/rules/typescript.mdc:")
    assert first.basis == ".cursor/rules/typescript.mdc:8"
    assert first.details == "TypeScript; applies to files matching *.ts, *.tsx"
    assert (first.kind, second.kind) == ("CONSTRAINT", "PREFERENCE")
    assert not capture.skipped


@pytest.mark.parametrize(
    ("front", "details"),
    [
        ("description: Python style\nalwaysApply: true\n", None),
        (
            "description: When writing migrations\nalwaysApply: false\n",
            "applied when relevant: When writing migrations",
        ),
        ("globs:\n  - src/**/*.py\n  - tests/*.py\n", "applies to files matching src/**/*.py, tests/*.py"),
    ],
)
def test_cursor_rule_applies(tmp_path: Path, front: str, details: str | None) -> None:
    path = write(tmp_path, ".cursor/rules/x.mdc", f"---\n{front}---\nUse type hints.\n")
    assert rules.read([path], root=tmp_path).claims[0].details == details


def test_claude_rules_paths(tmp_path: Path) -> None:
    path = write(
        tmp_path, ".claude/rules/api.md", '---\npaths:\n  - "src/api/**"\n---\n- Validate every input.\n'
    )
    claim = rules.read([path], root=tmp_path).claims[0]
    assert claim.details == "applies to files matching src/api/**" and claim.basis == ".claude/rules/api.md:5"


def test_directory_finds_the_rules_files(tmp_path: Path) -> None:
    write(tmp_path, "CLAUDE.md", "- a rule\n")
    write(tmp_path, "AGENTS.md", "- b rule\n")
    write(tmp_path, ".claude/rules/c.md", "- c rule\n")
    write(tmp_path, ".cursor/rules/d.mdc", "- d rule\n")
    write(tmp_path, ".cursorrules", "e rule\n")
    write(tmp_path, "README.md", "- not a rules file\n")
    assert [p.relative_to(tmp_path).as_posix() for p in rules.find(tmp_path)] == [
        "CLAUDE.md",
        "AGENTS.md",
        ".cursorrules",
        ".claude/rules/c.md",
        ".cursor/rules/d.mdc",
    ]
    capture = rules.read([tmp_path])  # the directory is the root of its files
    assert [c.basis for c in capture.claims] == [
        "CLAUDE.md:1",
        "AGENTS.md:1",
        ".cursorrules:1",
        ".claude/rules/c.md:1",
        ".cursor/rules/d.mdc:1",
    ]


def test_outside_the_root_keeps_the_rules_folder(tmp_path: Path) -> None:
    path = write(tmp_path, "elsewhere/.claude/rules/x.md", "- a rule\n")
    assert rules.document(path, root=tmp_path / "project") == "rules:.claude/rules/x.md"


def test_missing_file_and_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(NotASource, match="no such file"):
        rules.read([tmp_path / "CLAUDE.md"])
    with pytest.raises(NotASource, match="no rules file found"):
        rules.read([tmp_path])


def test_comments_quotes_tags_setext(tmp_path: Path) -> None:
    text = (
        "Style\n=====\n\n<rules>\n> - Quote a rule <!-- inline note --> here\n</rules>\n\n"
        "<!-- - one\n- two -->\n***\n- after a rule line\n"
    )
    capture = rules.read([write(tmp_path, "AGENTS.md", text)], root=tmp_path)
    assert statements(capture) == ["Quote a rule here", "after a rule line"]
    assert [c.details for c in capture.claims] == ["Style", "Style"]


def test_password_policy_words_are_plain_text(tmp_path: Path) -> None:
    # No secret logic here: redaction happens once, before upload (mneia.secrets).
    capture = rules.read(
        [write(tmp_path, "AGENTS.md", "- Follow the risk-based password policy.\n")], root=tmp_path
    )
    assert statements(capture) == ["Follow the risk-based password policy."]


@pytest.mark.parametrize(
    ("rule", "kind"),
    [
        ("Use pnpm, not npm.", "CONSTRAINT"),
        ("Never commit .env files.", "CONSTRAINT"),
        ("Don't add dependencies without asking.", "CONSTRAINT"),
        ("Tests must pass before a merge.", "CONSTRAINT"),
        ("No default exports.", "CONSTRAINT"),
        ("Only touch files under src/.", "CONSTRAINT"),
        ("Prefer composition over inheritance.", "PREFERENCE"),
        ("You should keep functions short.", "PREFERENCE"),
        ("Avoid global state.", "PREFERENCE"),
        ("Try to write a test first.", "PREFERENCE"),
        ("Favour pure functions; ideally no I/O.", "PREFERENCE"),
        ("Consider caching where possible.", "PREFERENCE"),
        ("Prefer small PRs, and never force-push.", "CONSTRAINT"),
    ],
)
def test_kind(rule: str, kind: str) -> None:
    assert rules.kind(rule) == kind


WORDS = st.text(alphabet=st.sampled_from("abcdefghij `:,."), min_size=1, max_size=30).filter(
    lambda s: bool(s.strip().strip(":"))
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(WORDS, min_size=1, max_size=8), st.integers(1, 4))
def test_key_depends_on_the_text_only(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], spaces: int
) -> None:
    """However the bullets are spaced, wrapped or preceded, each rule's key is its text's."""
    root = tmp_path_factory.mktemp("rules")
    tight = write(root, "a/AGENTS.md", "".join(f"- {t}\n" for t in texts))
    loose = write(root, "b/AGENTS.md", "# Heading\n\n" + "".join(f"-{' ' * spaces}{t}\n\n" for t in texts))
    one = rules.read([tight], root=tight.parent)
    two = rules.read([loose], root=loose.parent)
    assert [c.key for c in one.claims] == [c.key for c in two.claims]
    assert len({c.key for c in one.claims}) == len(one.claims)
    lines = tight.read_text().splitlines()
    for claim in one.claims:
        assert re.fullmatch(r"rules:AGENTS\.md:[0-9a-f]{16}", claim.key)
        line = int(claim.basis.rsplit(":", 1)[1])  # type: ignore[union-attr]
        assert " ".join(lines[line - 1][2:].split()) == claim.statement
