"""Handoff: what a session leaves, at its checkpoint, for whoever resumes the work (R12).

Revision ID: 0006_handoff
Revises: 0005_rehydration
Create Date: 2026-11-30

- ``handoffs``: one per session, written once by ``checkpoint`` and never
  changed (the server's role may SELECT and INSERT it, nothing else). It
  keeps references to the items, replacements, proposals and disputes it
  names, which every reader sees under its own row-level security;
- ``handoffs_idempotency``: an author's idempotency key names one handoff, so
  a retried checkpoint finds it;
- ``handoffs_latest``: a project's newest handoff, for ``latestHandoff`` and
  ``resume``;
- row-level security: read by whoever works in the project and by its author;
  written by the session's own actor, in the session's project, now.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0006_handoff"
down_revision = "0005_rehydration"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
