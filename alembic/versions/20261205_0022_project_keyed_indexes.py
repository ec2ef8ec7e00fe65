"""The items' indexes keyed by the project alone (issue 24, part 5).

Revision ID: 0022_project_keyed_indexes
Revises: 0021_implied_history
Create Date: 2026-12-05

Every index on items but the unique ones led with ``workspace_id, project_id``.
A project lies in one workspace, so the workspace key narrowed nothing and
cost 16 bytes an entry: a quarter of the page index, a fifth of the as-of
one, 7 MB per 100,000 items in all. In the text indexes (btree_gin) each key
is a posting list of the whole project that a search reads where the word's
matches fall, so one key instead of two also halves what a word with a few
hundred matches costs. Statements still name the workspace, checked on the
row (storage/item.py's tenant); the primary key and the unique constraints
keep it. The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0022_project_keyed_indexes"
down_revision = "0021_implied_history"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
