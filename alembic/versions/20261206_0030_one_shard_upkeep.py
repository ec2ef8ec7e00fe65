"""The sweep's upkeep and an erasure run on Citus too (issue 25).

Found running the privacy suite on a Citus cluster:

- ``mneia_fold_item_counts()`` folded the counter rows of every workspace in
  one statement that locks them (``FOR UPDATE SKIP LOCKED``); Citus locks rows
  only in a statement routed to one shard ("could not run distributed query
  with FOR UPDATE/SHARE commands"), so every sweep failed. It now takes the
  workspace, and ``storage.count.fold`` folds one workspace per transaction.
- ``mneia_erase_actor`` set ``erased_at = coalesce(erased_at, now())``, which
  Citus refuses in an UPDATE (no function that is not immutable inside
  COALESCE or CASE); ``least(erased_at, now())`` keeps an earlier erasure the
  same way.

The same results on one server. No row is touched. The upgrade and downgrade
are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0030_one_shard_upkeep"
down_revision = "0029_workspace_region"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
