"""Privacy by controls (issue 23): retention as redaction (R16), legal holds (R17), erasure (R18).

Revision ID: 0016_privacy
Revises: 0015_identity
Create Date: 2026-12-02

- ``retention_policies`` and ``legal_holds``: tenant tables, RLS like the others;
  humans write them.
- ``items.redacted_at``/``redaction_reason``: an item whose text was blanked;
  ``items_redacted`` refuses, for every role, writing text back or redacting a
  held item. ``mneia_redact`` (the owner's; the sweep) blanks an item and every
  copy of its text; ``mneia_erase_actor`` (granted to the app, for a human)
  revokes an actor's tokens, pseudonymises it and redacts its PRIVATE items.
- ``actors.erased_at``; ``api_tokens_not_erased`` refuses a token for an erased actor.
- item events REDACTED, HELD, RELEASED.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0016_privacy"
down_revision = "0015_identity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
