"""Revoke from PUBLIC what mneia_app does not need of PostgreSQL's own functions and statistics.

Revision ID: 0012_catalog_privileges
Revises: 0011_whole_structure
Create Date: 2026-12-01

As ``mneia_app`` with no context, ``pg_stat_user_tables`` showed every
tenant's row counts, and ``lo_create``, advisory locks and ``pg_notify`` on
any channel were allowed (issue 21). In this database: large-object
functions, advisory locks, ``pg_notify`` (kept for ``mneia_owner``, whose
announcement trigger sends it), the per-table ``pg_stat_get_*(oid)``
functions and the ``pg_stat*_tables`` and ``*_indexes`` views are no longer
PUBLIC's. Only a superuser may; migrated by an administrator who is not one,
nothing changes and a NOTICE says so (as 0005's LEAKPROOF). The grants live
in this database's catalogue: after restoring into a new database, run the
block at the end of storage/sql/roles.sql again as a superuser.
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0012_catalog_privileges"
down_revision = "0011_whole_structure"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
