"""The replacements' index keyed by the workspace and the project again (issue 24).

Since every statement is planned for its values (storage.database.PLANNED_WITH_VALUES),
rehydration's recent replacements, for a project of a million items beside 1,000
workspaces, were read through ``items_one_successor`` (the workspace and
``supersedes_id IS NOT NULL`` in its key) and a month's 19,773 of them sorted:
129 ms against 4.5 ms once this index names every equality the statement
states and is walked in its order (benchmarks/scale.py's kept database,
EXPLAIN ANALYZE). It holds replacements only, so the 16 bytes an entry cost
little. The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0023_replacements_by_workspace"
down_revision = "0022_project_keyed_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
