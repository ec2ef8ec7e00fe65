"""Events, states, proposals, disputes and handoffs: policies that read their own row (issue 25).

``item_event_read``, ``item_state_read``, ``proposal_read`` and ``dispute_read``
showed a row when its item (a dispute: both its items) could be seen, asking
``items``; ``handoff_write`` asked ``sessions`` whose session a handoff closes.
On a cluster distributed by workspace a policy may read no other table
(docs/scale-out.md). Each row now carries its item's audience (project, scope,
asserter, grants) or its session's actor and project, copied by a trigger as
the row is written (``mneia_copy_audience``, ``mneia_copy_creator``), and the
policies restate ``item_read`` over the copies; ``items_audience_follows``
rewrites the copies should the owner ever change an item's audience. The
owner's functions keep reading every event and proposal of the workspace
(``item_event_guard_read``, ``proposal_guard_read``), as they did through
``item_guard_read``. Existing rows are filled from ``items`` and ``sessions``.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0026_audiences_on_the_rows"
down_revision = "0025_policies_read_their_own_row"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
