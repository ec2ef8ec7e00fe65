"""The GraphQL documents the MCP tools send: only operations an agent may perform.

Human-only operations (``confirmItem``, ``setLoadBearing``, ``decideProposal``,
``resolveDispute``, creating actors, projects, teams and tokens) appear in none
of them (a test reads every document against the schema's human-only marks).
"""

from __future__ import annotations

ME = "{ me { id name kind } }"

PROJECTS = "{ projects { id name } }"

START_SESSION = """
mutation ($input: StartSessionInput!) { startSession(input: $input) { id } }
"""

RESUME = """
query ($input: ResumeInput!) { resume(input: $input) { rendered } }
"""

REHYDRATE = """
query ($input: RehydrateInput!) { rehydrate(input: $input) { rendered } }
"""

CHECKPOINT = """
mutation ($input: CheckpointInput!) { checkpoint(input: $input) { rendered } }
"""

LATEST_HANDOFF = """
query ($project: ID!) { latestHandoff(projectId: $project) { rendered } }
"""

ASSERT = """
mutation ($input: AssertItemInput!) {
  assertItem(input: $input) { id rendered disputes { id contested { id rendered } } }
}
"""

KIND = """
query ($id: ID!) { item(id: $id) { kind scope } }
"""

SUPERSEDE = """
mutation ($input: SupersedeInput!) {
  supersedeItem(input: $input) {
    __typename
    ... on Superseded { previous { id rendered } replacement { id rendered } }
    ... on PendingConfirmation { proposal { id target { id rendered } replacementStatement } }
  }
}
"""

DISPUTE = """
mutation ($id: ID!, $contested: ID!, $reason: String!) {
  disputeItem(id: $id, contestedId: $contested, reason: $reason) {
    id item { id rendered } contested { id rendered }
  }
}
"""

SEARCH = """
query ($project: ID!, $filter: ItemFilter, $first: Int) {
  items(projectId: $project, filter: $filter, first: $first) { totalCount nodes { id rendered } }
}
"""

GET = """
query ($id: ID!) {
  item(id: $id) {
    id rendered details supersessionReason
    provenance { basis partial missing session { id task externalId deepLink client { tool version } } }
    chain { id rendered }
    disputes { id status reason item { id } contested { id } }
  }
}
"""

VERIFY = """
mutation ($id: ID!) { verifyItem(id: $id) { id rendered } }
"""

RETIRE = """
mutation ($id: ID!, $reason: String!) { retireItem(id: $id, reason: $reason) { id rendered } }
"""

CONSTRAINTS = """
query ($project: ID!, $first: Int!) {
  items(
    projectId: $project, first: $first
    filter: {kinds: [CONSTRAINT], statuses: [ACTIVE], loadBearing: true}
  ) {
    totalCount nodes { id rendered }
  }
}
"""

ALL = (
    ME,
    PROJECTS,
    START_SESSION,
    RESUME,
    REHYDRATE,
    CHECKPOINT,
    LATEST_HANDOFF,
    ASSERT,
    KIND,
    SUPERSEDE,
    DISPUTE,
    SEARCH,
    GET,
    VERIFY,
    RETIRE,
    CONSTRAINTS,
)
