"""The binding of a transaction reads the actor's kind and memberships in one statement (issue 25).

``mneia_bind``, on every request (``mneia_authenticate`` calls it), read the
actor's kind, its projects, its teams and its teams' projects in four
statements. On Citus each statement the worker runs is planned by Citus
before it runs locally, and authentication cost about 1.0 ms more a request
than on plain PostgreSQL (benchmarks/scale_out.py). One statement with the
same four lookups, each stating its workspace, now reads them: the values
and the seal are the same. No row is touched. The upgrade and downgrade are
the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0033_binding_in_one_statement"
down_revision = "0032_keyed_lookups_planned_once"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
