"""mneia_redact finds the held among its items in a statement of its own (issue 25).

It asked ``mneia_held(ws, project, id)`` for each item inside the statement that
locks the items it blanks. On Citus that statement runs on a shard, and a
function that reads a table, called from it, is refused (``cannot execute a
distributed query from a query on a shard``). The held items are now found
first, with mneia_held's rule written out, and left out of the lock. The same
result on one server; the trigger ``items_redacted`` still refuses a held item's
redaction whatever the statement.

No row is touched. The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0028_holds_read_apart"
down_revision = "0027_triggers_on_shards"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
