"""Rehydration: the indexes its candidates are found by, and full-text search under RLS (R11.9).

Revision ID: 0005_rehydration
Revises: 0004_time
Create Date: 2026-11-30

- ``items_live``: a project's items of one kind still believed (ACTIVE or
  DISPUTED), newest first, with the scope and author the visibility policy
  reads: a task's candidates of that kind when its words are common (no
  search vector in it: a B-tree entry cannot hold a long item's);
- ``items_guaranteed``: every ACTIVE load-bearing CONSTRAINT of a project,
  which a slice always holds (R11.1);
- ``items_replacements``: the replacements of a project by when they were
  asserted, for the recent supersessions a slice lists (R11.4);
- ``ts_match_vq`` (``tsvector @@ tsquery``) marked LEAKPROOF when the
  administrator is a superuser, so that a condition on ``items.search`` may
  use ``items_search`` under row-level security (see storage/sql/roles.sql).
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0005_rehydration"
down_revision = "0004_time"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
