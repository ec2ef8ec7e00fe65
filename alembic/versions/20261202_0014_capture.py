"""Capture (issue 22): imports are idempotent, keep the source's own times, and say what was redacted.

Revision ID: 0014_capture
Revises: 0013_minted_tokens
Create Date: 2026-12-02

- ``imports``: the ledger of what each import wrote, by the source's own key
  (a tool-call id, an ADR's path, a rule's text), so that importing the same
  thing twice writes nothing; a document's keys keep their place in it, so
  that a re-import pairs an edited rule with the one it replaces. RLS as the
  other tenant tables: read and written by whoever works in the project.
- ``items.said_at``: when the source said it (a transcript's turn, an ADR's
  date), never later than ``asserted_at``, the server's unforgeable record of
  when Mneia learned it, by which ``asOf`` reads.
- ``items.redacted``: the kinds of credential removed from its text.
- ``sessions.transcript_started_at``/``transcript_ended_at``: an imported
  transcript's own times, beside the server's record.
- ``handoffs.draft``: a handoff written by the client's model (a compact
  summary), not by a checkpoint call.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0014_capture"
down_revision = "0013_minted_tokens"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
