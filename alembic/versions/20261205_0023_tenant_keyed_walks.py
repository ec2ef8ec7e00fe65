"""The B-trees walked in order keyed by the workspace and the project again (issue 24).

Revision ID: 0023_tenant_keyed_walks
Revises: 0022_project_keyed_indexes
Create Date: 2026-12-05

0022 keyed every non-unique index on items by the project alone: a project
lies in one workspace, so the workspace key narrowed nothing. But every
statement and policy states both equalities, and a prepared statement's
generic plan (PostgreSQL's after five runs) knows neither value. With a
project of a million items beside 1,000 workspaces of 1,000, the planner took
the project for one of the small ones and read all of it through a bitmap
of the two keys and a sort: a page took 934 ms at p95 (13 ms before 0022),
rehydrate 750 ms (benchmarks/scale.py). Keyed by both, the walk in order is
the cheapest plan whatever the values, as before 0022. The text indexes
(GIN, read through bitmaps in every plan) keep the project alone. The
upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0023_tenant_keyed_walks"
down_revision = "0022_project_keyed_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
