"""Argument checks shared by the resolvers. Each error names the field (R14).

``text_problem`` is the rule every string of a request obeys, checked once
for the whole request before any resolver runs (resolvers.request.execution); the
other checks here are per field.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import urllib.parse
import uuid

from mneia.errors import BadInput
from mneia.secrets import KINDS

TEXT_LIMIT = 20_000
"""The longest string any argument may hold, in characters; some fields allow less."""


def text_problem(value: str) -> str | None:
    """Why PostgreSQL could not store ``value`` as text, or None when it can (F9)."""
    if len(value) > TEXT_LIMIT:
        return f"is longer than {TEXT_LIMIT} characters"
    if "\x00" in value:
        return "contains a NUL character (U+0000), which text cannot hold"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            code = ord(value[error.start])
            return f"contains a lone surrogate (U+{code:04X}), which is not Unicode text"
    return None


def parse_id(value: object, field: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise BadInput(field, f"{value!r} is not a valid id") from None


def parse_ids(values: list[object] | None, field: str) -> list[uuid.UUID]:
    return [parse_id(value, field) for value in values or []]


def _checked(text: str, field: str, limit: int, one_line: bool) -> str:
    if len(text) > limit:
        raise BadInput(field, f"is longer than {limit} characters")
    if one_line and any(ord(char) < 32 or ord(char) == 127 for char in text):
        raise BadInput(field, "must be one line without control characters")
    return text


def required_text(value: str | None, field: str, limit: int = TEXT_LIMIT, *, one_line: bool = False) -> str:
    text = (value or "").strip()
    if not text:
        raise BadInput(field, "must not be empty")
    return _checked(text, field, limit, one_line)


def optional_text(
    value: str | None, field: str, limit: int = TEXT_LIMIT, *, one_line: bool = False
) -> str | None:
    if value is None:
        return None
    return _checked(value.strip(), field, limit, one_line) or None


RESUME_COMMANDS = (
    re.compile(r"claude (--resume|-r) [\w.:-]+"),
    re.compile(r"codex resume [\w.:-]+"),
    re.compile(r"gemini (--resume|-r) [\w.:-]+"),
)
"""The clients' own ways back to a conversation (shared/clients/HOOKS.md), and nothing else runnable."""


def deep_link(value: str | None, field: str) -> str | None:
    """Where the conversation can be opened again: an http(s) URL, or a known client's resume command.

    A deep link is shown to people and agents as a way back; ``javascript:``,
    ``data:``, ``file:`` and arbitrary shell text are refused, so that it can
    never be a script or a command to paste."""
    text = optional_text(value, field, 2000, one_line=True)
    if text is None:
        return None
    parsed = urllib.parse.urlsplit(text)
    if parsed.scheme.lower() in ("http", "https") and parsed.netloc and " " not in text:
        return text
    if any(command.fullmatch(text) for command in RESUME_COMMANDS):
        return text
    raise BadInput(
        field,
        "must be an http(s) URL or a client's resume command"
        " (claude --resume ID, codex resume ID, gemini --resume ID)",
    )


def name(value: str | None, field: str = "name") -> str:
    """A display name: shown inside rendered tags, so one line and short."""
    return required_text(value, field, 200, one_line=True)


def confidence(value: float | None, field: str = "confidence") -> float | None:
    if value is None:
        return None
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise BadInput(field, f"must be between 0 and 1, got {value}")
    return value


def redacted_kinds(values: list[str] | None, field: str) -> tuple[str, ...]:
    """Kinds of credential a client says it removed (mneia.secrets): each one Mneia knows, once."""
    for value in values or []:
        if value not in KINDS:
            raise BadInput(field, f"{value!r} is not a kind of credential Mneia redacts ({', '.join(KINDS)})")
    return tuple(dict.fromkeys(values or []))


def page_size(value: int | None, field: str = "first", limit: int = 500) -> int:
    size = 50 if value is None else value
    if not 1 <= size <= limit:
        raise BadInput(field, f"must be between 1 and {limit}, got {size}")
    return size


def encode_cursor(item_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(item_id.bytes).decode().rstrip("=")


def decode_cursor(cursor: str | None, field: str = "after") -> uuid.UUID | None:
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return uuid.UUID(bytes=raw)
    except (binascii.Error, ValueError):
        raise BadInput(field, "is not a cursor returned by this API") from None
