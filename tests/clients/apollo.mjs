// Apollo Client 4 with automatic persisted queries, as a browser app would run it,
// against a real Mneia server. Prints one JSON object: what was sent and what came back.
// Usage: node apollo.mjs URL TOKEN PROJECT_ID
import { createHash } from "node:crypto";
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";

const [url, token, projectId] = process.argv.slice(2);
const sent = [];
const recordingFetch = async (input, init) => {
  const body = JSON.parse(init.body);
  sent.push({ hashOnly: body.query === undefined, hash: body.extensions?.persistedQuery?.sha256Hash ?? null });
  return fetch(input, init);
};
const sha256 = (text) => createHash("sha256").update(text).digest("hex");
const client = new ApolloClient({
  link: new PersistedQueryLink({ sha256 }).concat(
    new HttpLink({ uri: url, fetch: recordingFetch, headers: { Authorization: `Bearer ${token}` } }),
  ),
  cache: new InMemoryCache(),
});

const ME = gql`query Me { me { id kind name } }`;
const ASSERT = gql`
  mutation Assert($input: AssertItemInput!) {
    assertItem(input: $input) { id authority statement }
  }
`;

const first = await client.query({ query: ME, fetchPolicy: "network-only" });
const again = await client.query({ query: ME, fetchPolicy: "network-only" });
const asserted = await client.mutate({
  mutation: ASSERT,
  variables: { input: { projectId, kind: "FACT", statement: "Apollo Client persisted this query" } },
});
let refused = null;
try {
  await client.mutate({ mutation: ASSERT, variables: { input: { projectId, kind: "FACT", statement: "" } } });
} catch (error) {
  refused = (error.errors ?? []).map((e) => ({ message: e.message, code: e.extensions?.code }));
}
console.log(JSON.stringify({ sent, me: first.data.me, again: again.data.me, asserted: asserted.data.assertItem, refused }));
