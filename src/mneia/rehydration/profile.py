"""What a team's function makes a slice favour: kind weights and quotas by default (R11.3).

A support engineer resuming a ticket needs the customer's facts and
preferences; a backend engineer resuming a migration needs the constraints
and decisions. The project's team carries a free-text ``function``; the first
profile below whose keywords appear among its words supplies the weights
(multiplying relevance in the score) and the quotas (``maxShare``: the share
of the token budget SCORED entries of one kind may use). A project without a
team, or a function no profile names, gets ``GENERAL``. A call's own
``quotas`` override the profile's, kind by kind.

The shares of one profile add up to more than 1 on purpose: each caps one
kind, so that a pile of similar facts cannot crowd out the rest, without
reserving budget for a kind the task does not need.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from mneia.vocabulary import ItemKind

C, D, F, P, Q, T = (
    ItemKind.CONSTRAINT,
    ItemKind.DECISION,
    ItemKind.FACT,
    ItemKind.PREFERENCE,
    ItemKind.QUESTION,
    ItemKind.TASK,
)


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    keywords: frozenset[str]
    weights: Mapping[ItemKind, float]
    quotas: Mapping[ItemKind, float]


def _kinds(c: float, d: float, f: float, p: float, q: float, t: float) -> dict[ItemKind, float]:
    return {C: c, D: d, F: f, P: p, Q: q, T: t}


GENERAL = Profile(
    "general",
    frozenset(),
    weights=_kinds(1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
    quotas=_kinds(0.40, 0.40, 0.40, 0.20, 0.20, 0.30),
)

PROFILES = (
    Profile(
        "engineering",
        frozenset(
            {"engineering", "backend", "frontend", "platform", "infrastructure", "infra", "devops", "sre"}
            | {"data", "mobile", "security", "api"}
        ),
        weights=_kinds(1.2, 1.2, 1.0, 0.8, 0.9, 1.0),
        quotas=_kinds(0.45, 0.45, 0.35, 0.15, 0.15, 0.25),
    ),
    Profile(
        "support",
        frozenset({"support", "customer", "customers", "success", "service", "helpdesk"}),
        weights=_kinds(1.0, 0.9, 1.2, 1.2, 1.1, 0.9),
        quotas=_kinds(0.30, 0.25, 0.45, 0.30, 0.25, 0.20),
    ),
    Profile(
        "product",
        frozenset({"product", "design", "ux", "research"}),
        weights=_kinds(1.0, 1.2, 0.9, 1.2, 1.2, 1.0),
        quotas=_kinds(0.30, 0.45, 0.25, 0.30, 0.25, 0.25),
    ),
)


def profile_for(function: str | None) -> Profile:
    """The profile of a team function (e.g. "Backend", "Customer support"); GENERAL when none fits."""
    words = set(re.findall(r"\w+", (function or "").lower()))
    for profile in PROFILES:
        if words & profile.keywords:
            return profile
    return GENERAL
