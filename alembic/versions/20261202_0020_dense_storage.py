"""Denser storage per item (issue 24): the same answers from fewer pages.

Revision ID: 0020_dense_storage
Revises: 0019_tenant_search
Create Date: 2026-12-02

- ``items_page``, ``items_replacements`` and ``item_events_kind`` ascending:
  a B-tree is read backward as readily as forward, and a key that only grows
  keeps its pages full, where a descending one halves each page it splits.
- ``items_live`` becomes ``items_live_<kind>``: one index of ids per kind,
  each growing at one end, without the INCLUDE columns no plan could use.
- An assertion's event keeps ``supersedes`` and ``session`` only when set.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0020_dense_storage"
down_revision = "0019_tenant_search"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
