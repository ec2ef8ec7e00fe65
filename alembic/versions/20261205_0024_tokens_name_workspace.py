"""Tokens name their workspace, and are found in it (issue 25).

A token minted from now on ends with its workspace's id (storage/token.py),
and ``mneia_authenticate(digest, workspace)`` finds it by ``workspace_id =
X AND token_hash = …``, the lookup every other table already gets: one
tenant's rows, and on a cluster distributed by workspace one node rather than
all of them. ``token_hash`` is unique within a workspace (a digest of 256
random bits is unique anyway); tokens minted before name no workspace and are
still found by their digest alone, through ``api_tokens_digest``. The
bootstrap takes the new workspace's id from its caller, who mints the token
that names it. The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0024_tokens_name_workspace"
down_revision = "0023_replacements_by_workspace"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
