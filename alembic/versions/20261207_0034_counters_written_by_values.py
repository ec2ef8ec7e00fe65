"""The item counters are written one ``INSERT … VALUES`` a counter row (issue 25).

``mneia_items_count`` added a statement's changes to the counters with one
``INSERT … SELECT FROM unnest(…) ON CONFLICT``. On Citus an INSERT … SELECT
into a distributed table is planned again at every statement, and its rows
are gathered before they are sent to their shard: the counters were most of
the extra cost of an assertion on a worker (benchmarks/scale_out.py). Each
counter row, in the same key order, is now its own ``INSERT … VALUES``, which
Citus sends straight to the shard with a plan kept for the connection. A
statement touches a few counter rows, not one per item. The values written
are the same; no row is touched. The upgrade and downgrade are the SQL files
beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0034_counters_written_by_values"
down_revision = "0033_binding_in_one_statement"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
