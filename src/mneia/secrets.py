"""Secrets kept out of memory: value-shaped credentials redacted from text no person typed into Mneia.

Users of other memory products found live credentials in durable memory that
every connected agent could read (issue 22). What an agent sends unattended
(MCP tool arguments, today; hooks and importers when they come) passes
through ``redact`` first. Each rule is data: a kind, the pattern of the value
(never a keyword such as "password", which prose is full of), and how many of
its first characters stay, so that a reader can still tell which credential
it was (``AKIA…[redacted aws-access-key]``). ``<private>…</private>`` regions
go whole.

No library fitted: detect-secrets and its kin scan files and report line
numbers (no redaction in place), and their entropy detectors flag ordinary
identifiers; the value shapes below are the vendors' documented formats.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    keep: int
    """How many leading characters of the match stay readable."""


def _rule(kind: str, pattern: str, keep: int) -> Rule:
    return Rule(kind, re.compile(pattern), keep)


RULES = (
    _rule(
        "private-key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        len("-----BEGIN"),
    ),
    _rule("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 3),
    _rule("aws-access-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", 4),
    _rule("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b", 4),
    _rule("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}", 6),
    _rule("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 5),
    _rule("stripe-key", r"\b(?:sk|rk)_live_[A-Za-z0-9]{16,}", 8),
    _rule("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", 3),
    _rule("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b", 4),
    _rule("url-password", r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:[^\s@/]+@", 0),
)
PRIVATE = re.compile(r"<private>[\s\S]*?</private>", re.IGNORECASE)
KINDS = ("private", *(rule.kind for rule in RULES))
"""Every kind ``redact`` may name: what an item's provenance may list as redacted."""


@dataclass(frozen=True, slots=True)
class Redacted:
    text: str
    kinds: tuple[str, ...]
    """The kinds of credential redacted, in the order of the rules, each once."""


def _masked(rule: Rule, found: re.Match[str]) -> str:
    value = found.group(0)
    if rule.kind == "url-password":  # keep the scheme and the user, drop the password
        scheme, _, rest = value.partition("://")
        user = rest.split(":", 1)[0]
        return f"{scheme}://{user}:[redacted {rule.kind}]@"
    return f"{value[: rule.keep]}…[redacted {rule.kind}]"


def redact(text: str) -> Redacted:
    """``text`` with every credential the rules recognise replaced, and private regions removed."""
    kinds: list[str] = []
    if PRIVATE.search(text):
        text = PRIVATE.sub("[private]", text)
        kinds.append("private")
    for rule in RULES:
        if rule.pattern.search(text):
            text = rule.pattern.sub(functools.partial(_masked, rule), text)
            kinds.append(rule.kind)
    return Redacted(text, tuple(kinds))


def redacted_values(value: object) -> object:
    """Every string inside ``value`` (a GraphQL request's variables) redacted, the rest as it was.

    An item's input (an object with a ``statement``) also names the kinds removed from its own
    strings in ``redacted``, so that they reach the item's provenance (``Provenance.redacted``).
    """
    if isinstance(value, str):
        return redact(value).text
    if isinstance(value, list):
        return [redacted_values(item) for item in value]
    if isinstance(value, dict):
        cleaned = {key: redacted_values(item) for key, item in value.items()}
        if isinstance(value.get("statement"), str):
            own = [
                kind
                for name, item in value.items()
                if isinstance(item, str) and name != "redacted"
                for kind in redact(item).kinds
            ]
            given = [kind for kind in value.get("redacted") or [] if isinstance(kind, str)]
            if own or given:
                cleaned["redacted"] = list(dict.fromkeys([*given, *own]))
        return cleaned
    return value
