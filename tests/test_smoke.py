from tests.graphql import Api, World


async def test_walkthrough(api: Api, world: World) -> None:
    session = await api.run(
        world.agent.token,
        """mutation($p: ID!) { startSession(input: {projectId: $p, task: "t",
             client: {tool: "claude-code", version: "1.0.98"}, externalId: "abc"}) { id provenancePartial provenanceMissing } }""",
        p=world.project_id,
    )
    sid = session["startSession"]["id"]
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use Postgres", sessionId=sid, kind="DECISION")
    assert item["authority"] == "AGENT_ASSERTED"
    confirmed = await api.run(world.human.token, "mutation($i: ID!) { confirmItem(id: $i) { authority confirmation { by { name } at } } }", i=item["id"])
    assert confirmed["confirmItem"]["authority"] == "HUMAN_CONFIRMED"
    page = await api.run(world.human.token, """query($p: ID!) { items(projectId: $p) { totalCount nodes { id statement authority chain { id } disputes { id }
        provenance { assertedBy { name kind } actorKind partial missing session { client { tool version } deepLink } } project { name team { name } } } pageInfo { hasNextPage endCursor } } }""", p=world.project_id)
    print(page)
    error = await api.fail(world.agent.token, "mutation($i: ID!) { confirmItem(id: $i) { id } }", i=item["id"])
    print(error)
    assert error["extensions"]["code"] == "FORBIDDEN"
