"""Counts that do not scan (issue 24): ``item_counts``, kept per audience by statement triggers.

Revision ID: 0018_counts
Revises: 0016_privacy
Create Date: 2026-12-02

- ``item_counts``: how many items each audience of a project sees, by status,
  kind, load-bearing and confirmation; RLS restates item_read over audiences,
  so that a reader's sum is the number of items it may see (storage/sql/counts.sql).
- ``items_counted_*``: statement-level triggers that keep it; each connection
  writes its own rows (slot), ``mneia_fold_item_counts`` (the sweep's) folds them.
- The items already there are counted once, with writers held off.
- ``items_selection`` goes: counting a project's visible items was its only use.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0018_counts"
down_revision = "0016_privacy"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
