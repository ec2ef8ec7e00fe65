"""A tool's arguments that fail validation, refused in the contract's words (R14).

The MCP SDK checks a call's arguments against the tool's signature (pydantic)
before the tool runs, so nothing is written; it would answer pydantic's own
report. ``refusal`` says it as the API says bad input: BAD_USER_INPUT, then
each field (the tool's argument, ``items[0].kind`` inside one) and what is
wrong with it, e.g. ``kind: expected one of CONSTRAINT, DECISION, FACT,
PREFERENCE, QUESTION, TASK``.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from mneia.mcp.api import ApiError

# pydantic's error type: the bound a number crossed, as the API says it, and its key in the context.
BOUNDS = {
    "greater_than_equal": ("at least", "ge"),
    "greater_than": ("more than", "gt"),
    "less_than_equal": ("at most", "le"),
    "less_than": ("less than", "lt"),
}
# pydantic's error type: what the field expected, where the error carries nothing more to say.
EXPECTED = {
    "missing": "is required",
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "finite_number": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "list_type": "expected a list",
    "dict_type": "expected an object",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
}


def _field(location: tuple[int | str, ...]) -> str:
    """Where the error is, as the API names a field: ``kinds[1]``, ``items[0].kind``."""
    named = ""
    for part in location:
        if isinstance(part, int):
            named += f"[{part}]"
        else:
            named += f".{part}" if named else part
    return named or "arguments"


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _problem(error: ErrorDetails) -> str:
    kind, context = error["type"], error.get("ctx") or {}
    if kind == "literal_error":
        allowed = re.findall(r"'([^']*)'", str(context.get("expected", "")))
        return f"expected one of {', '.join(allowed)}"
    if kind == "string_too_short":
        least = context.get("min_length", 1)
        return "must not be empty" if least == 1 else f"is shorter than {least} characters"
    if kind == "string_too_long":
        return f"is longer than {context.get('max_length')} characters"
    if kind in BOUNDS:
        said, bound = BOUNDS[kind]
        return f"must be {said} {_number(context.get(bound))}, got {_number(error['input'])}"
    return EXPECTED.get(kind) or error["msg"][:1].lower() + error["msg"][1:]


def refusal(error: ValidationError) -> ApiError:
    """``error`` as the API's BAD_USER_INPUT: every field that failed, with what it expects."""
    problems = dict.fromkeys(f"{_field(each['loc'])}: {_problem(each)}" for each in error.errors())
    return ApiError("BAD_USER_INPUT", "; ".join(problems))
