"""Issue 22, part 5: value-shaped credentials never enter memory through what an agent sends.

One test per rule of ``mneia.secrets.RULES``, with a sample built here at run
time (so that nothing credential-shaped sits in the repository), the words
that must not match, and the MCP path end to end: an agent's ``assert_item``
carrying a key is stored redacted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.secrets import RULES, redact, redacted_values
from tests.graphql import Api, World
from tests.live import uvicorn_serving
from tests.mcp_client import call, http_client

A = "A" * 40
SAMPLES = {
    "private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + A + "\n-----END RSA PRIVATE KEY-----",
    "jwt": "eyJ" + "hbGciOiJIUzI1" + ".eyJ" + "zdWIiOiIxMjM0" + "." + "SflKxwRJSMeKKF2QT4fw",
    "aws-access-key": "AKIA" + "IOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "gitlab-token": "glpat-" + "x1Y2z3A4b5C6d7E8f9G0",
    "slack-token": "xoxb-" + "123456789012-abcdefABCDEF",
    "stripe-key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "openai-key": "sk-proj-" + "abcdefghijklmnopqrstuvwxyz012345",
    "google-api-key": "AIza" + "SyA1234567890abcdefghijklmnopqrstuv",
    "url-password": "postgresql://mneia:" + "s3cr3t-Passw0rd" + "@db.internal:5432/prod",
}


def test_every_rule_has_a_sample() -> None:
    assert set(SAMPLES) == {rule.kind for rule in RULES}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a_credential_is_redacted_keeping_its_prefix_and_naming_its_kind(kind: str) -> None:
    secret = SAMPLES[kind]
    found = redact(f"Deploy with {secret} then restart")
    assert found.kinds == (kind,)
    assert f"[redacted {kind}]" in found.text
    assert found.text.startswith("Deploy with ") and found.text.endswith(" then restart")
    hidden = secret.split("://", 1)[-1].split(":", 1)[-1] if kind == "url-password" else secret[8:]
    assert hidden not in found.text


def test_what_stays_readable() -> None:
    assert redact(SAMPLES["aws-access-key"]).text == "AKIA…[redacted aws-access-key]"
    assert redact(SAMPLES["url-password"]).text == (
        "postgresql://mneia:[redacted url-password]@db.internal:5432/prod"
    )


def test_a_private_region_goes_whole() -> None:
    found = redact("Keep this. <private>the staging root password is hunter2</private> And this.")
    assert found.text == "Keep this. [private] And this." and found.kinds == ("private",)


@pytest.mark.parametrize(
    "prose",
    [
        "Use a risk-based review for refunds",
        "The password policy requires 12 characters",
        "sk-learn is not a key, nor is ask-me or task-list",
        "AKIA is the prefix of AWS access key ids",
        "Connect to https://docs.example.com/guide@v2 for the guide",
        "The token_hash column keeps a SHA-256 digest",
        "ghp_ tokens are GitHub's personal access tokens",
        "postgresql://localhost:5432/mneia has no password",
    ],
)
def test_words_that_must_not_match(prose: str) -> None:
    assert redact(prose).text == prose and redact(prose).kinds == ()


def test_variables_are_redacted_wherever_the_strings_sit() -> None:
    key = SAMPLES["aws-access-key"]
    given = {"input": {"statement": key, "nextSteps": [f"rotate {key}"], "confidence": 0.5, "n": None}}
    assert redacted_values(given) == {
        "input": {
            "statement": "AKIA…[redacted aws-access-key]",
            "nextSteps": ["rotate AKIA…[redacted aws-access-key]"],
            "confidence": 0.5,
            "n": None,
            # An item's input names the kinds removed from its own strings (issue 22).
            "redacted": ["aws-access-key"],
        }
    }
    assert "redacted" not in redacted_values({"input": {"statement": "nothing secret here"}})["input"]  # type: ignore[index]


@pytest.fixture(scope="module")
async def base(engine: AsyncEngine) -> AsyncIterator[str]:
    async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
        yield f"http://127.0.0.1:{port}"


ITEMS = (
    "query($p: ID!) { items(projectId: $p) { nodes { statement details provenance { basis redacted } } } }"
)


async def test_an_agents_assertion_over_mcp_is_stored_redacted(base: str, api: Api, world: World) -> None:
    key, url = SAMPLES["github-token"], SAMPLES["url-password"]
    async with http_client(base, world.agent.token) as client:
        await call(
            client,
            "assert_item",
            kind="FACT",
            statement=f"CI pushes with {key}",
            details=f"The migration job connects to {url}",
            basis="<private>from the on-call chat</private> the deploy log",
        )
    (node,) = [
        n
        for n in (await api.run(world.human.token, ITEMS, p=world.project_id))["items"]["nodes"]
        if n["statement"].startswith("CI pushes")
    ]
    assert node["statement"] == "CI pushes with ghp_…[redacted github-token]"
    assert "s3cr3t" not in node["details"] and "[redacted url-password]" in node["details"]
    assert node["provenance"]["basis"] == "[private] the deploy log"
    # The kinds removed are recorded in its provenance, so a reader knows something was withheld.
    assert node["provenance"]["redacted"] == ["github-token", "url-password", "private"]
