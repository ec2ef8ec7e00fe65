"""Each kind's own full-text index over the items still believed, for rehydration's candidates.

Revision ID: 0009_kind_search
Revises: 0008_filters
Create Date: 2026-11-30

``items_search_<kind>``: GIN over ``search`` of the ACTIVE and DISPUTED items
of one kind. A task's candidates are chosen per kind (R11.9); with only
``items_search``, a kind's branch found through the index read every kind's
matches and kept its own, so the planner walked ``items_live`` instead and
checked the match on 1,800 rows a kind for middling words (15 ms of the
candidate query at 100,000 items, against 7 ms with these). Together they
hold each live item once more, so a write adds one GIN entry; ``items_search``
stays for as-of reads and for the branch that spans kinds.
Indexes only: no table, function or grant changes.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0009_kind_search"
down_revision = "0008_filters"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
