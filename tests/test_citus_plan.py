"""What ``storage.citus`` makes of storage/sql, without a cluster (the cluster: test_citus_migrate.py).

- The statements it splits the files into are the files' statements: run one after another they
  are the file (checked by reassembling them, and against PostgreSQL's own count of a sample).
- Each policy's shell variant has no sub-select, and differs from the declared text only by the
  accessors' sub-selects; the policies it cannot carry are exactly those that read another table.
- A DO block carries any statement intact, whatever dollar quotes it holds.
"""

from __future__ import annotations

import re

import pytest

from mneia.storage import citus, declared
from tests.test_declared import POLICIES_READING_ANOTHER_TABLE


def all_statements() -> list[str]:
    return [s for name in declared.FILES for s in citus.statements(declared.read(name))]


def test_a_script_splits_at_the_semicolons_outside_quotes_and_comments() -> None:
    sql = """
-- a comment; with a semicolon
CREATE TABLE a (x text DEFAULT 'it''s; here');
/* a block; comment */ SELECT 1;
CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;
DO $body$ BEGIN PERFORM 'x;y'; END $body$;
SELECT "odd;name" FROM a
"""
    assert list(citus.statements(sql)) == [
        "CREATE TABLE a (x text DEFAULT 'it''s; here')",
        "/* a block; comment */ SELECT 1",
        "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$",
        "DO $body$ BEGIN PERFORM 'x;y'; END $body$",
        'SELECT "odd;name" FROM a',
    ]


@pytest.mark.parametrize("name", declared.FILES)
def test_every_declared_file_is_its_statements_one_after_another(name: str) -> None:
    """Nothing of a file is lost or cut: its statements, joined, are the file without comments
    between them (compared with the whitespace and comment lines squeezed out)."""
    sql = declared.read(name)
    found = list(citus.statements(sql))
    assert found and all(s.strip() and not s.endswith(";") for s in found)

    def squeezed(text: str) -> str:
        lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
        return re.sub(r"\s+", "", "\n".join(lines))

    assert squeezed(";".join(found) + ";") == squeezed(sql)


def test_tables_and_policies_are_found_where_the_files_declare_them() -> None:
    statements = all_statements()
    created = [s.split()[2] for s in statements if s.startswith("CREATE TABLE ")]
    assert created[0] == citus.FIRST  # every other distributed table is colocated with it
    assert set(citus.REFERENCE_TABLES) | set(citus.LOCAL_TABLES) <= set(created)
    policies = [citus.policy(s) for s in statements]
    assert sum(p is not None for p in policies) == sum(s.startswith("CREATE POLICY ") for s in statements)


def test_the_shell_variant_is_the_declared_policy_with_plain_calls() -> None:
    policies = [p for p in map(citus.policy, all_statements()) if p is not None]
    left_out = {(p.table, p.name) for p in policies if p.shell is None}
    assert left_out == POLICIES_READING_ANOTHER_TABLE
    carried = [p for p in policies if p.shell is not None]
    assert len(carried) > 50
    for p in carried:
        assert p.shell is not None and "SELECT" not in p.shell.replace("FOR SELECT", ""), p.name
        # Put each call back in its sub-select: the declared text again.
        assert re.sub(r"(mneia_\w+\((?:'\w*')?\))", r"(SELECT \1)", p.shell) == p.text, p.name
        # What run_command_on_shards's format() makes of the shard's variant: the declared text.
        on_a_shard = p.on_shard().replace("%1$s", f"{p.table}_102008").replace("%%", "%")
        assert on_a_shard == p.text.replace(f" ON {p.table}", f" ON {p.table}_102008", 1), p.name


def test_a_do_block_quotes_each_statement_with_a_tag_it_does_not_hold() -> None:
    statement = "CREATE FUNCTION g() RETURNS text LANGUAGE sql AS $q0$ SELECT '$q1$' $q0$"
    block = citus._do_block([statement, "SELECT 1"])
    assert f"EXECUTE $q2${statement}$q2$;" in block
    assert "EXECUTE $q0$SELECT 1$q0$;" in block
    with pytest.raises(ValueError):
        citus._do_block(["DO $body$ BEGIN END $body$"])
