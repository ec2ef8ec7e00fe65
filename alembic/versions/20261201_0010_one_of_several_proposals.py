"""A human accepts any one of an agent's pending replacements of an item, not only the first.

Revision ID: 0010_one_of_several_proposals
Revises: 0009_kind_search
Create Date: 2026-12-01

``mneia_items_guard`` lets a human write a row asserted by an agent only when
it is exactly what the agent proposed. It read the agent's pending
SUPERSESSION proposals of the item into one record and compared the row with
that one, so when the agent had proposed two replacements of one item,
accepting the second was refused as FORBIDDEN (found by
tests/test_as_of_property.py). It now looks for a pending proposal of the
agent's, on that item, made at the row's instant and matching it exactly:
the same rule, whichever proposal is accepted.
Function body only: no table, index or grant changes.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0010_one_of_several_proposals"
down_revision = "0009_kind_search"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
