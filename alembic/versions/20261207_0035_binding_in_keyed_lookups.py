"""The binding reads the actor's kind and memberships in four keyed lookups again (issue 25).

Migration 0033 joined ``mneia_bind``'s four lookups into one statement,
measured a little faster on Citus at the time. That measurement was made on
a Citus whose local plan cache never hit (scripts/citus-patches/
0001-local-plan-cache.patch): every fast-path lookup was planned again at
each call, so fewer statements cost less. With the cache working, each
single-table lookup stating its workspace is a fast-path query whose plan the
worker keeps for the connection, while the joined statement is a router
query that Citus plans again at every call: authentication on a worker took
0.32 ms of the database's time with four lookups against 0.85 ms with one.
On one server the two forms cost the same (0.24 against 0.24 ms). The values
and the seal are unchanged; no row is touched. The upgrade and downgrade are
the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0035_binding_in_keyed_lookups"
down_revision = "0034_counters_written_by_values"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
