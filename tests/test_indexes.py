"""Which key the items' indexes lead with (migrations 0022 and 0023, issue 24).

Every statement and policy states the workspace and the project (storage/item.py's tenant). The
B-trees that a statement walks in order lead with both: a prepared statement's generic plan knows
neither value, and with the workspace missing from the key it took a project of a million items
beside 1,000 small workspaces for a small one, reading all of it through a bitmap and a sort
(benchmarks/scale.py: a page 934 ms at p95 instead of 13). The text indexes are GIN, read through
bitmaps whatever the plan: they lead with the project alone, which halves a word's posting lists.
An agent's session's items are keyed by the session. The unique indexes keep the workspace.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

KEYS = text(
    """
    SELECT c.relname AS name, i.indisunique AS is_unique, am.amname AS method,
           array_agg(a.attname ORDER BY k.n) FILTER (WHERE a.attname IS NOT NULL) AS columns
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_am am ON am.oid = c.relam
    CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
    LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
    WHERE i.indrelid = 'public.items'::regclass
    GROUP BY c.relname, i.indisunique, am.amname
    """
)


async def test_the_items_walks_lead_with_the_tenant_and_the_text_indexes_with_the_project(
    admin_engine: AsyncEngine,
) -> None:
    async with admin_engine.connect() as connection:
        found = (await connection.execute(KEYS)).mappings().all()
    plain = {row["name"]: row for row in found if not row["is_unique"]}
    unique = {row["name"]: row for row in found if row["is_unique"]}
    walks = {name: row for name, row in plain.items() if row["method"] == "btree" and name != "items_session"}
    texts = {name: row for name, row in plain.items() if row["method"] == "gin"}
    assert {"items_page", "items_asserted", "items_live_fact", "items_unconfirmed", "items_decaying"} <= set(
        walks
    )
    assert {"items_search", "items_search_fact"} <= set(texts)
    assert {name: row["columns"][:2] for name, row in walks.items()} == {
        name: ["workspace_id", "project_id"] for name in walks
    }
    assert {name: row["columns"] for name, row in texts.items()} == {
        name: ["project_id", "search"] for name in texts
    }
    assert plain["items_session"]["columns"] == ["session_id"]
    assert set(plain) == {*walks, *texts, "items_session"}
    assert unique["items_pkey"]["columns"] == ["workspace_id", "id"]
