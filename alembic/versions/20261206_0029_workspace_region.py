"""A workspace has a region, fixed when it is created (issue 25, regions).

``workspaces.region`` names where the workspace's rows live; ``Workspace.region``
reads it, and a token minted for a workspace outside the default region names
that region (storage/token.py). The workspaces that exist get the region of
the server being migrated: the ``region`` attribute of the alembic config
(``mneia migrate``/``mneia serve --region``), else ``MNEIA_REGION``, else
``local`` (config.region). It reaches the SQL as a transaction-local setting,
read once by the column's default, which is dropped at once: a new workspace
states its region (``mneia_bootstrap`` takes it). An UPDATE of the region is
refused by a trigger, for every role. The upgrade and downgrade are the SQL
files beside this one.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from mneia.config import region
from mneia.storage.migration import run_beside

revision = "0029_workspace_region"
down_revision = "0028_holds_read_apart"
branch_labels = None
depends_on = None


def upgrade() -> None:
    given = op.get_context().config.attributes.get("region") if op.get_context().config else None
    here = region(given)
    op.execute(text("SELECT set_config('mneia.migrating_region', :region, true)").bindparams(region=here))
    run_beside(__file__, "upgrade")
    op.execute(text("SELECT set_config('mneia.migrating_region', '', true)"))


def downgrade() -> None:
    run_beside(__file__, "downgrade")
