// graphql-ws (the reference graphql-transport-ws client) subscribing to disputeRaised on a
// real Mneia server; once the server has acknowledged the connection it raises a dispute
// over HTTP and prints the event the subscription delivers, as one JSON object.
// Usage: node graphql-ws.mjs WS_URL HTTP_URL TOKEN ITEM_ID CONTESTED_ID
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const [wsUrl, httpUrl, token, itemId, contestedId] = process.argv.slice(2);
const client = createClient({
  url: wsUrl,
  webSocketImpl: WebSocket,
  connectionParams: { Authorization: `Bearer ${token}` },
  retryAttempts: 0,
});
const events = client.iterate({
  query: "subscription { disputeRaised { id reason item { id } contested { id } } }",
});
const acknowledged = new Promise((resolve) => client.on("connected", resolve));
const next = events.next();
await acknowledged;
await new Promise((resolve) => setTimeout(resolve, 300)); // the subscribe message reaches the server
const raised = await fetch(httpUrl, {
  method: "POST",
  headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
  body: JSON.stringify({
    query: "mutation($i: ID!, $c: ID!) { disputeItem(id: $i, contestedId: $c, reason: \"graphql-ws\") { id } }",
    variables: { i: itemId, c: contestedId },
  }),
}).then((response) => response.json());
const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error("no event within 10 s")), 10000));
const event = await Promise.race([next, timeout]);
await events.return();
await client.dispose();
console.log(JSON.stringify({ raised, event: event.value }));
