"""Markers: a line a person types in a session so that Mneia remembers one thing.

The syntax, exactly::

    mneia: <kind>: <statement>
    mneia: <kind>: <statement> !load-bearing

- A marker is a whole line. Spaces or tabs may come before ``mneia:``. Nothing else may.
- ``mneia:`` is followed by one kind word: ``constraint``, ``decision``, ``fact``,
  ``preference``, ``question`` or ``task``. Then comes ``:``. Spaces or tabs may surround the
  kind word, but there may be none between ``mneia`` and its colon. Letter case does not matter,
  here or in the flag below.
- The statement runs from that colon to the end of the line and must not be empty. Whitespace
  around it is dropped. Nothing else in it changes.
- A trailing ``!load-bearing`` (at least one space or tab before it, nothing after it but
  whitespace) is a flag, not part of the statement. It asks a human to rule the item
  load-bearing (``suggest_load_bearing``). It rules nothing: a marker from a transcript stays
  unconfirmed until a person confirms it in Mneia. A line that is only the flag
  (``mneia: fact: !load-bearing``) is not a marker.
- These are not markers:
  - a line inside a fenced code block. A fence is a line that opens, after optional whitespace,
    with three or more backticks (with no other backtick on the line) or three or more tildes.
    It is closed by a line of the same character, at least as long, with nothing else on it. An
    unclosed fence runs to the end of the text.
  - a quoted line, whose first character that is not whitespace is ``>``.
  - ``mneia:`` anywhere but the start of its line.
  - a kind word outside the list (``decisions``, ``note``).

Examples::

    mneia: decision: We use PostgreSQL row-level security for tenancy
    mneia: constraint: Never log request bodies !load-bearing
      MNEIA: Question : Do refunds need a second approver?

``markers`` only reads syntax. It has no view of who wrote the text. The transcript readers
(``capture.transcript``) pass it only the turns a person typed, never assistant text, tool
results or text the client injected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("constraint", "decision", "fact", "preference", "question", "task")
FLAG = "!load-bearing"

_MARKER = re.compile(r"[ \t]*mneia:[ \t]*(" + "|".join(KINDS) + r")[ \t]*:(.*)", re.IGNORECASE)
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")


@dataclass(frozen=True, slots=True)
class Marker:
    kind: str  # the kind word in upper case: an ItemKind
    statement: str
    line: int  # 1-based, in the text given to ``markers``
    load_bearing: bool = False


def markers(text: str) -> list[Marker]:
    """The markers of ``text``, in order."""
    found: list[Marker] = []
    fence: str | None = None  # the opening fence's run of backticks or tildes while inside one
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        opened = _FENCE.fullmatch(line)
        if fence is not None:
            if opened and opened[1][0] == fence[0] and len(opened[1]) >= len(fence) and not opened[2].strip():
                fence = None
            continue
        if opened and not (opened[1][0] == "`" and "`" in opened[2]):
            fence = opened[1]
            continue
        match = _MARKER.fullmatch(line)
        if match is None:
            continue
        statement, load_bearing = match[2].strip(), False
        if statement.lower().endswith(FLAG):
            head = statement[: -len(FLAG)]
            if not head or head[-1] in " \t":
                statement, load_bearing = head.strip(), True
        if statement:
            found.append(Marker(match[1].upper(), statement, number, load_bearing))
    return found
