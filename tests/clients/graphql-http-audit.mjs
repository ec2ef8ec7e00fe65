// graphql-http's GraphQL-over-HTTP server audit against a running server.
// Usage: node graphql-http-audit.mjs http://127.0.0.1:PORT/graphql
// Prints one JSON array: every audit's id, name, status (ok, warn, error) and reason.
import { auditServer } from 'graphql-http';

const url = process.argv[2];
if (!url) {
  console.error('usage: node graphql-http-audit.mjs URL');
  process.exit(2);
}
const results = await auditServer({ url });
console.log(
  JSON.stringify(
    results.map(({ id, name, status, reason }) => ({ id, name, status, reason: reason ?? null })),
  ),
);
