"""Tokens that expire, are listed and revoked through the API, and a revocation announced (F14, F16).

Revision ID: 0003_tokens
Revises: 0002_authority
Create Date: 2026-11-30

- ``api_tokens`` gains ``expires_at`` (after it, ``mneia_authenticate`` no
  longer accepts the token: the database's now() decides), ``hint`` (the
  first characters of the secret, to tell tokens apart) and ``revoked_by``;
- a human sees and revokes the tokens of the actors it created, an actor
  its own (policies ``token_read``, ``token_revoke``); a revocation is by
  the requesting actor, at now(), once (``mneia_token_guard``);
- a revocation is announced on the workspace's channel, so that a
  subscription on that token ends at once (``mneia_announce_revocation``);
- an item's validity and decay stay within what the driver reads back
  (``items_validity_readable``, ``items_decay_readable``): no stored value
  can break a read (F4).
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0003_tokens"
down_revision = "0002_authority"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
