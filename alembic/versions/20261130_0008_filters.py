"""Filters the inbox needs: indexes for items by authority and staleness, and for events by kind.

Revision ID: 0008_filters
Revises: 0007_function_costs
Create Date: 2026-11-30

- ``items_unconfirmed``: the active items nobody confirmed, in the order
  ``items(orderBy: SUGGESTED_THEN_CONFIDENCE)`` reads them.
- ``items_decaying``: the active items that can go stale, the longest
  unchecked first (``orderBy: LONGEST_UNCHECKED``).
- ``item_events_kind``: a project's events of some kinds, newest first
  (``events(projectId, kinds)``).
Indexes only: no table, function or grant changes.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0008_filters"
down_revision = "0007_function_costs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
