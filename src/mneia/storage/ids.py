"""Time-ordered identifiers (UUID version 7): index-friendly and sortable by creation."""

from __future__ import annotations

import uuid

import uuid6


def new_id() -> uuid.UUID:
    return uuid.UUID(int=uuid6.uuid7().int)
