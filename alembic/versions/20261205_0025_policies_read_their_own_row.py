"""The token and membership policies read their own row only (issue 25).

``token_read``, ``token_create`` and ``token_revoke`` asked ``actors`` who created a
token's actor; ``team_member_add`` and ``project_member_add`` asked ``teams`` and
``projects`` who created them. On a cluster distributed by workspace a policy
may read no other table (docs/scale-out.md), so each row now carries that
creator, copied by a trigger as the row is written (``mneia_copy_creator``;
never the caller's word, and creators never change). Existing rows are filled
from the tables the policies read before. The upgrade and downgrade are the
SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0025_policies_read_their_own_row"
down_revision = "0024_tokens_name_workspace"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
