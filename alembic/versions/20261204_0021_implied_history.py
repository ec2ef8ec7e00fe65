"""An item's history implied by its row while it has none (issue 24, part 5).

Revision ID: 0021_implied_history
Revises: 0020_dense_storage
Create Date: 2026-12-04

Most items are asserted and never changed, and each kept an ASSERTED event and
one state that say nothing its row does not: a third of the database. Such an
item now keeps neither; its first change, hold or redaction writes them from
the row as it was (storage/sql/events.sql, docs/history.md). The upgrade
deletes exactly the rows that equal what their item's row implies; the
downgrade writes every item's history again. The upgrade and downgrade are the
SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0021_implied_history"
down_revision = "0020_dense_storage"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
