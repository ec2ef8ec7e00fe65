"""graphql-http's GraphQL-over-HTTP audit against the real server: 0 errors, 0 warnings.

``mneia serve`` runs on a free port over the tests' database; the audit
(``graphql-http``'s ``auditServer``, pinned in tests/clients/package-lock.json)
runs from Node and prints every audit's status. Its requests carry no token:
every one is introspection (``{ __typename }``, ``__type(name:)``), which runs
without a token, or is refused before execution (parse, validation, 405).
Skipped when node or npm is missing; ``npm ci`` installs the audit on first use.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.live import CLIENTS, cli_env, node_clients, serving


@pytest.fixture(scope="module")
def node() -> str:
    return node_clients()


def test_f16_graphql_http_audit_reports_no_error_and_no_warning(
    node: str, admin_url: str, tmp_path: Path
) -> None:
    with serving([], cli_env(tmp_path, DATABASE_URL=admin_url), tmp_path) as (_, base):
        audit = subprocess.run(
            [node, str(CLIENTS / "graphql-http-audit.mjs"), f"{base}/graphql"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert audit.returncode == 0, audit.stderr
    results = json.loads(audit.stdout)
    assert len(results) >= 50, "the audit ran fewer checks than graphql-http 1.23 has"
    assert [result for result in results if result["status"] != "ok"] == []
