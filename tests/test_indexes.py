"""The items' indexes are keyed by the project alone (migration 0022, issue 24 part 5), but one.

A project lies in one workspace, so a workspace key beside the project's
narrows nothing; it cost 16 bytes an index entry and, in the text indexes, a
second posting list of the whole project read for every search. The unique
indexes keep the workspace (the primary key: a row's tenant is part of its
identity). The plans that use them are measured by benchmarks/scale.py, where
a million items make the planner's choice the one that matters.

The one: the replacements' index keeps the workspace (migration 0023). Planned
for a big tenant's values, the planner took an index naming the workspace over
it and sorted a month of replacements (129 ms against 4.5).
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

KEYS = text(
    """
    SELECT c.relname AS name, i.indisunique AS is_unique,
           array_agg(a.attname ORDER BY k.n) FILTER (WHERE a.attname IS NOT NULL) AS columns,
           (SELECT attname FROM pg_attribute WHERE attrelid = i.indrelid AND attnum = i.indkey[0]) AS leading
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
    LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
    WHERE i.indrelid = 'public.items'::regclass
    GROUP BY c.relname, i.indisunique, i.indrelid, i.indkey
    """
)


async def test_the_items_indexes_lead_with_the_project_and_name_the_workspace_only_where_stated(
    admin_engine: AsyncEngine,
) -> None:
    async with admin_engine.connect() as connection:
        found = (await connection.execute(KEYS)).mappings().all()
    plain = {row["name"]: row for row in found if not row["is_unique"]}
    unique = {row["name"]: row for row in found if row["is_unique"]}
    expected = {"items_page", "items_asserted", "items_search", "items_live_fact", "items_unconfirmed"}
    assert expected <= set(plain)
    tenant_keyed = {"items_replacements"}
    assert {name for name, row in plain.items() if "workspace_id" in row["columns"]} == tenant_keyed
    assert plain["items_replacements"]["columns"] == ["workspace_id", "project_id", "asserted_at", "id"]
    by_session = {"items_session"}  # an agent's session's items: the session is the key
    led_otherwise = {name for name, row in plain.items() if row["leading"] != "project_id"}
    assert led_otherwise == by_session | tenant_keyed
    assert unique["items_pkey"]["columns"] == ["workspace_id", "id"]
