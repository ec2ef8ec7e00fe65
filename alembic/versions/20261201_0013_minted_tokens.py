"""A token mints nothing that outlives it, whatever the statement: its expiry is sealed in the context.

Revision ID: 0013_minted_tokens
Revises: 0012_catalog_privileges
Create Date: 2026-12-01

A 60-second token minted a token that never expired, and the inbox's 12-hour
session token an agent whose token never expired (issue 21). The API refuses
that now (resolvers/token.py); this makes the database refuse it for any SQL
of ``mneia_app``. ``mneia_authenticate`` seals the presenting token's expiry
into the context beside the rest (``mneia.token_expires``, the seal's message
``mneia-context-v2``), ``mneia_token_expires()`` reads it, and the trigger
``api_tokens_minted`` (``mneia_token_minted``) refuses a token written in the
transaction that expires later, or never. Functions and a trigger only.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0013_minted_tokens"
down_revision = "0012_catalog_privileges"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
