"""The ``---`` front matter of Markdown files (MADR ADRs, Cursor and Claude rules), read by hand."""

from __future__ import annotations

import re

Fields = dict[str, str | list[str]]


def front_matter(lines: list[str]) -> tuple[Fields, int]:
    """The ``---`` … ``---`` block's simple keys, and how many lines it takes (0 when there is none).

    Only what ADRs and rules files put there: ``key: value``, ``key: [a, b]``
    and ``key:`` followed by ``- item`` lines. Not PyYAML: it is not among
    this distribution's dependencies, and Cursor's ``globs: *.ts`` is not
    valid YAML anyway.
    """
    if not lines or lines[0].strip() != "---":
        return {}, 0
    fields: Fields = {}
    key: str | None = None
    for n, line in enumerate(lines[1:], start=1):
        stripped = line.strip()
        if stripped in ("---", "..."):
            return fields, n + 1
        if not stripped or stripped.startswith("#"):
            continue
        item = re.match(r"-\s+(.*)$", stripped)
        if item and key is not None:
            value = fields.get(key)
            fields[key] = [*value, unquote(item[1])] if isinstance(value, list) else [unquote(item[1])]
            continue
        pair = re.match(r"([A-Za-z_][\w-]*)\s*:\s*(.*)$", stripped)
        if pair is None or line[:1].isspace():
            continue
        key = pair[1].lower()
        raw = pair[2].strip()
        if raw.startswith("[") and raw.endswith("]"):
            fields[key] = [unquote(v) for v in raw[1:-1].split(",") if v.strip()]
        else:
            fields[key] = unquote(re.sub(r"\s+#.*$", "", raw)) if raw else []
    return {}, 0  # never closed: not front matter


def unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
