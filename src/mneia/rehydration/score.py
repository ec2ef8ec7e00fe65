"""An item's score for a task: the one formula, its constants, nowhere else (R11.5).

    score = relevance x kind weight x authority x freshness x (DISPUTED_FACTOR if DISPUTED)

- relevance, in [0, 1]: PostgreSQL's ``ts_rank`` of the item's statement and
  details against the task's words (any of them; an item sharing none is not
  a candidate), divided by the best rank among the task's candidates, so the
  best match has 1;
- kind weight: how much the project's team function cares for the kind
  (rehydration.profile), 1 by default;
- authority: ``HUMAN`` for an item a human confirmed (or stated); an agent's
  unconfirmed assertion ``AGENT_FLOOR + AGENT_SPAN x confidence`` (its
  confidence counted as ``UNKNOWN_CONFIDENCE`` when it gave none), so 0.4 to
  0.8: a guess never weighs like a ruling, however sure the agent was;
- freshness, in (0, 1]: mneia.freshness, judged at the slice's moment (1 for
  an item without decayAfter, 1/2 when it goes stale);
- DISPUTED: an item contradicting another, awaiting a human, keeps a quarter
  of its score; it is still shown, flagged, never silently applied.

An item that shares no word with the task has relevance 0, so score 0. When
every candidate that matches the task is in and budget remains, such items
fill the rest, ranked by their ``standing``: the score without relevance,
doubled for a load-bearing item (``LOAD_BEARING_STANDING``), so that a
human's standing ruling comes before an agent's passing remark.

Pure, no I/O.
"""

from __future__ import annotations

from datetime import datetime

from mneia.storage.item import ItemRecord
from mneia.vocabulary import ItemStatus

HUMAN = 1.0
"""Authority of an item a human confirmed."""

AGENT_FLOOR = 0.4
AGENT_SPAN = 0.4
"""An agent's unconfirmed assertion: AGENT_FLOOR + AGENT_SPAN x confidence."""

UNKNOWN_CONFIDENCE = 0.5
"""The confidence of an agent's assertion that gave none."""

DISPUTED_FACTOR = 0.25
"""What a DISPUTED item keeps of its score."""

LOAD_BEARING_STANDING = 2.0
"""How much more a load-bearing item stands when it fills the budget the task's matches left."""


def authority(record: ItemRecord) -> float:
    """How much the item's authority weighs: a human's ruling above any agent's assertion."""
    if record.confirmed_by is not None:
        return HUMAN
    confidence = UNKNOWN_CONFIDENCE if record.confidence is None else record.confidence
    return AGENT_FLOOR + AGENT_SPAN * confidence


def relevance(rank: float, best: float) -> float:
    """The item's rank for the task relative to the best candidate's, in [0, 1]."""
    if best <= 0.0 or rank <= 0.0:
        return 0.0
    return min(rank / best, 1.0)


def _worth(record: ItemRecord, kind_weight: float, moment: datetime) -> float:
    """kind weight x authority x freshness, x DISPUTED_FACTOR when DISPUTED: the score but relevance."""
    value = kind_weight * authority(record) * record.freshness_at(moment)
    if record.status == ItemStatus.DISPUTED:
        value *= DISPUTED_FACTOR
    return value


def score(record: ItemRecord, rank: float, best: float, kind_weight: float, moment: datetime) -> float:
    """The item's score for the task at ``moment`` (the formula in the module's docstring)."""
    return relevance(rank, best) * _worth(record, kind_weight, moment)


def standing(record: ItemRecord, kind_weight: float, moment: datetime) -> float:
    """How an item sharing no word with the task ranks when it fills the budget left."""
    boost = LOAD_BEARING_STANDING if record.load_bearing else 1.0
    return _worth(record, kind_weight, moment) * boost
