"""Cheaper checks: no SQL-language function with its own search_path, one call less per policy check.

Revision ID: 0007_function_costs
Revises: 0006_handoff
Create Date: 2026-11-30

- The functions written in SQL (``mneia_uuid7``, ``mneia_unbind``,
  ``mneia_trusted_session``, the authority guards' tests, the channel names…)
  are PL/pgSQL now. A SQL function with a ``SET search_path`` clause is never
  inlined, and its body is parsed and planned again by every statement that
  calls it: ``mneia_uuid7`` cost 27 µs a call, 6 µs in PL/pgSQL, whose plans
  are kept by the connection.
- ``mneia_context_field`` checks the seal itself instead of through
  ``mneia_sealed``: the policies call it about twenty times per write, and a
  call with its own search_path costs about as much as the hashing.
Nothing else changes: same names, arguments, results and grants.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0007_function_costs"
down_revision = "0006_handoff"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
