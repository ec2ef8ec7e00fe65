"""The marker syntax of ``mneia.capture.marker``: examples, then invariants over random text (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mneia.capture.marker import KINDS, Marker, markers


def test_the_documented_example() -> None:
    found = markers("mneia: decision: We use PostgreSQL row-level security for tenancy")
    assert found == [Marker("DECISION", "We use PostgreSQL row-level security for tenancy", 1)]


def test_every_kind_word_in_any_case_and_spacing() -> None:
    text = "\n".join(
        [
            "mneia: constraint: a",
            "  MNEIA: Decision : b",
            "\tMneia:fact:c",
            "mneia:  preference  :   d   ",
            "mneia: QUESTION: e?",
            "mneia: task: f",
        ]
    )
    assert [(m.kind, m.statement, m.line) for m in markers(text)] == [
        ("CONSTRAINT", "a", 1),
        ("DECISION", "b", 2),
        ("FACT", "c", 3),
        ("PREFERENCE", "d", 4),
        ("QUESTION", "e?", 5),
        ("TASK", "f", 6),
    ]


def test_load_bearing_flag_is_taken_off_the_statement() -> None:
    assert markers("mneia: constraint: Never log request bodies !load-bearing") == [
        Marker("CONSTRAINT", "Never log request bodies", 1, load_bearing=True)
    ]
    assert markers("mneia: constraint: x !LOAD-BEARING  ")[0].load_bearing
    # glued to a word, or in the middle, it is text of the statement
    assert markers("mneia: fact: x!load-bearing") == [Marker("FACT", "x!load-bearing", 1)]
    assert markers("mneia: fact: !load-bearing is a flag") == [Marker("FACT", "!load-bearing is a flag", 1)]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "mneia: decision:",
        "mneia: decision:    ",
        "mneia: fact: !load-bearing",
        "mneia: decisions: plural is not a kind",
        "mneia: note: not a kind",
        "mneia decision: no colon after mneia",
        "mneia : decision: space before the colon",
        "mneia: decision no colon after the kind",
        "We agreed, mneia: decision: not at the start of the line",
        "> mneia: decision: quoted",
        "  >mneia: decision: quoted",
        "`mneia: decision: inline code`",
        "- mneia: decision: a list item",
    ],
)
def test_not_markers(text: str) -> None:
    assert markers(text) == []


def test_fenced_code_is_not_markers() -> None:
    text = "\n".join(
        [
            "mneia: fact: before",
            "```python",
            "mneia: fact: in backticks",
            "````",  # closes: same character, at least as long
            "mneia: fact: between",
            "~~~~",
            "mneia: fact: in tildes",
            "~~~",  # shorter: does not close
            "```",  # other character: does not close
            "mneia: fact: still in tildes",
            "~~~~~",
            "mneia: fact: after",
            "  ```",
            "mneia: fact: unclosed runs to the end",
        ]
    )
    assert [(m.statement, m.line) for m in markers(text)] == [("before", 1), ("between", 5), ("after", 12)]


def test_inline_backticks_do_not_open_a_fence() -> None:
    assert [m.statement for m in markers("```inline``` code\nmneia: fact: counted")] == ["counted"]


def test_crlf_lines() -> None:
    assert markers("hello\r\nmneia: task: ship it\r\n") == [Marker("TASK", "ship it", 2)]


# --- invariants --------------------------------------------------------------------------------

kind_words = st.sampled_from(KINDS).flatmap(
    lambda kind: st.lists(st.booleans(), min_size=len(kind), max_size=len(kind)).map(
        lambda upper: "".join(c.upper() if u else c for c, u in zip(kind, upper, strict=True))
    )
)
blanks = st.text(alphabet=" \t", max_size=3)
statements = (
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), min_size=1, max_size=60)
    .map(str.strip)
    .filter(lambda s: bool(s) and not s.lower().endswith("!load-bearing"))
)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)


@given(blanks, kind_words, blanks, blanks, statements, st.booleans())
def test_a_well_formed_line_is_exactly_its_marker(
    lead: str, kind: str, before: str, after: str, statement: str, flagged: bool
) -> None:
    line = f"{lead}mneia:{before}{kind}{after}:{after}{statement}" + (" !load-bearing" if flagged else "")
    assert markers(line) == [Marker(kind.upper(), statement, 1, flagged)]


@given(texts)
def test_found_markers_are_well_formed_lines_of_the_text(text: str) -> None:
    lines = text.split("\n")
    for found in markers(text):
        assert found.kind.lower() in KINDS
        assert found.statement and found.statement == found.statement.strip()
        assert "\n" not in found.statement
        source = lines[found.line - 1]
        assert source.lstrip(" \t").lower().startswith("mneia:")
        assert found.statement in source


@given(texts)
def test_text_without_the_prefix_has_no_markers(text: str) -> None:
    if "mneia:" not in text.lower():
        assert markers(text) == []


@given(
    st.lists(st.tuples(kind_words, statements), min_size=1, max_size=5), st.sampled_from(["> ", " > ", ">"])
)
def test_quoted_lines_are_never_markers(entries: list[tuple[str, str]], quote: str) -> None:
    assert markers("\n".join(f"{quote}mneia: {kind}: {statement}" for kind, statement in entries)) == []


@given(
    st.lists(st.tuples(kind_words, statements), min_size=1, max_size=5),
    st.sampled_from(["```", "~~~", "````"]),
)
def test_fenced_lines_are_never_markers(entries: list[tuple[str, str]], fence: str) -> None:
    body = "\n".join(f"mneia: {kind}: {statement}" for kind, statement in entries)
    assert markers(f"{fence}\n{body}\n{fence}") == []
    assert markers(f"{fence}\n{body}") == []  # unclosed


@given(
    st.lists(st.tuples(kind_words, statements), min_size=1, max_size=5),
    st.lists(st.text(alphabet="abc xyz.,!?", max_size=20), max_size=5),
)
def test_prose_around_markers_only_moves_their_line_numbers(
    entries: list[tuple[str, str]], prose: list[str]
) -> None:
    alone = markers("\n".join(f"mneia: {kind}: {statement}" for kind, statement in entries))
    mixed_lines: list[str] = []
    for index, (kind, statement) in enumerate(entries):
        mixed_lines += prose[index : index + 1]
        mixed_lines.append(f"mneia: {kind}: {statement}")
    mixed = markers("\n".join(mixed_lines))
    assert [(m.kind, m.statement, m.load_bearing) for m in mixed] == [
        (m.kind, m.statement, m.load_bearing) for m in alone
    ]
