"""Authentication and an assertion's triggers are planned once per connection (issue 24).

Every request's transaction forces custom plans (``storage.database.BEGIN``:
``plan_cache_mode = force_custom_plan``), so that a page or a slice of a
project of a million items is planned for that project, not an average one.
The setting reached the statements inside the database's functions too, which
were then planned again on every call: ``mneia_authenticate`` and
``mneia_bind`` on every request, ``mneia_items_count`` and
``mneia_items_asserted_log`` on every write of items. Each of their
statements finds rows by key (a token by its digest, an actor and its
memberships, the counters of the rows written, the events of the rows
written), which a generic plan does as well for every tenant. Measured with
``pg_stat_user_functions`` over 1,500 assertions in turn (the raw statements
of benchmarks/throughput.py, PostgreSQL 15): 2.03 ms of the backend's CPU an
assertion with forced custom plans against 1.32 ms without, of which these
four functions' own time 0.67 against 0.30 ms.

The four functions now carry ``SET plan_cache_mode = auto``: their statements
are planned generically after five calls, whatever the transaction says. No
row is touched. The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0032_keyed_lookups_planned_once"
down_revision = "0031_audience_copied_by_the_log"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
