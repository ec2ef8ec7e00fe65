"""No half-written structure survives a transaction: successors supersede, DISPUTED has a dispute.

Revision ID: 0011_whole_structure
Revises: 0010_one_of_several_proposals
Create Date: 2026-12-01

Two deferred constraint triggers, checked at commit on the rows as they stand
then (issue 21). Through raw SQL as ``mneia_app``, bound only to its own
token, an agent wrote a successor of its own ACTIVE item without marking it
SUPERSEDED: every rehydrate of the project then failed, and a human's later
supersession met ``items_one_successor``. It could also set its own item
DISPUTED with no dispute, after which nobody could confirm or resolve it.

- ``items_whole`` (``mneia_items_whole``): the item a successor replaces is
  SUPERSEDED (``items_successor_supersedes``); a DISPUTED item has an open
  dispute naming it (``items_disputed_by_dispute``).
- ``disputes_whole`` (``mneia_disputes_whole``): a dispute resolved leaves its
  item DISPUTED only while another open dispute names it.

Both refuse with check_violation naming the rule, and trust the
administrator's bulk tools, as every guard does. Functions and triggers only.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0011_whole_structure"
down_revision = "0010_one_of_several_proposals"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
