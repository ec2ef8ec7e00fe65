"""Authentication reads the token, its actor and the binding in one statement (issue 25).

``mneia_authenticate``, on every request, read the presented token, then bound
the transaction (``mneia_bind``: the actor's kind and memberships, one
statement since 0033), then read the actor's row: three statements, each of
which Citus plans before it runs (docs/scale-out.md). For a token naming its
workspace, one statement now reads all of it, the transaction sealed to that
workspace and no actor while it runs; the context and the seal it leaves are
the same as before. A token minted before 0024 is read as before. No row is
touched. The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0034_auth_in_one_statement"
down_revision = "0033_binding_in_one_statement"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
