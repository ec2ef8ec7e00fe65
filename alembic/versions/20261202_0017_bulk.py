"""Bulk writes (issue 24): an assertion's log at statement level, so a batch is a few statements.

Revision ID: 0017_bulk
Revises: 0018_counts
Create Date: 2026-12-02

- ``items_asserted_log``: the log of an INSERT (each row's ASSERTED event and
  its states), one statement-level trigger over the inserted rows (a
  transition table) instead of a call per row; ``items_log`` keeps the
  changes (AFTER UPDATE, per row), whose INSERT branch it no longer has.
- ``items_whole`` queues only the rows that could break its rules (a
  replacement, a DISPUTED item): a plain assertion queues nothing.
Each row's events and states are what they were. It follows 0018_counts, which
was committed first (their revision names were chosen before either was): a
database at 0018 must still reach this one. The upgrade and downgrade are the
SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0017_bulk"
down_revision = "0018_counts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
