"""``mneia gql``: one GraphQL operation from a shell, with the token from the environment.

The README's walkthrough is a list of commands a person pastes into a shell,
so the command reads what the other client-side commands read
(``capture.remote``): ``MNEIA_URL`` (default ``http://127.0.0.1:8000``) and
``MNEIA_TOKEN``. Variables are given as httpie gives them: ``name=value`` is
a string, ``name:=json`` any JSON value. It prints the operation's ``data``
as one line of JSON, or with ``--get PATH`` one value of it (a string
as it is, for ``ITEM=$(mneia gql … --get assertItem.id)``). A refused
operation prints ``mneia: CODE: message`` on stderr and exits 1, the
contract's code first, as every other command reports a failure.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mneia.capture import remote

_VARIABLE = re.compile(r"(?P<name>[_A-Za-z][_0-9A-Za-z]*)(?P<raw>:?)=(?P<value>.*)", re.S)


class Refused(Exception):
    """What the command was given cannot be sent, or its answer has no such path: one line for stderr."""


def variables(given: Iterable[str]) -> dict[str, Any]:
    """``name=value`` (a string) and ``name:=json`` (any JSON value) as the operation's variables."""
    found: dict[str, Any] = {}
    for item in given:
        match = _VARIABLE.fullmatch(item)
        if match is None:
            raise Refused(f"{item!r}: a variable is NAME=VALUE (a string) or NAME:=JSON")
        name, value = match["name"], match["value"]
        if match["raw"]:
            try:
                found[name] = json.loads(value)
            except ValueError as exc:
                raise Refused(f"variable {name}: {value!r} is not JSON ({exc})") from None
        else:
            found[name] = value
    return found


def dig(data: Any, path: str) -> Any:
    """The value at a dotted path of the answer (``items.nodes.0.rendered``)."""
    here = data
    for part in path.split("."):
        if isinstance(here, list) and part.isdigit() and int(part) < len(here):
            here = here[int(part)]
        elif isinstance(here, dict) and part in here:
            here = here[part]
        else:
            raise Refused(f"--get {path}: the answer has no {part!r} there")
    return here


def shown(value: Any) -> str:
    """A string as it is (a shell variable wants the id, not a quoted id); anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def run(document: str, given: Sequence[str], paths: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The lines to print for one operation; ``Refused`` or ``remote.RemoteError`` when it cannot."""
    if document == "-":
        document = sys.stdin.read()
    if not document.strip():
        raise Refused("no operation: give the GraphQL document, or - to read it from stdin")
    token = (env.get("MNEIA_TOKEN") or "").strip()
    if not token:
        raise Refused("MNEIA_TOKEN is not set: give the token of the actor who sends the operation")
    data = remote.Remote(remote.url_from(env), token).run(document, variables(given))
    if not paths:
        return [json.dumps(data, ensure_ascii=False)]
    return [shown(dig(data, path)) for path in paths]
