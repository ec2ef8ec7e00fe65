"""Text indexes keyed by tenant (issue 24): a word common in other workspaces costs nothing here.

Revision ID: 0019_tenant_search
Revises: 0017_bulk
Create Date: 2026-12-02

- btree_gin (trusted contrib; storage/sql/roles.sql), created by the
  migrating administrator before the role switch.
- ``items_search`` and each kind's ``items_search_<kind>`` lead with
  ``workspace_id, project_id``: a search reads its own project's matches from
  the index instead of every tenant's, to be dropped row by row under the
  policies.
- ``items_replacements`` in rehydration's order (asserted_at DESC, id DESC),
  so that it reads the few replacements it asks for, not a month of them.
- ``items_tenancy``: extended statistics saying a project lies in one
  workspace, so that the planner does not multiply their shares.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0019_tenant_search"
down_revision = "0017_bulk"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
