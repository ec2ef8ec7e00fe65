// Mneia's GraphiQL page: every file comes from this server, and the request
// headers (a human's bearer token) are never written to the browser's storage.
"use strict";

// GraphiQL's dialogs add a <style> element stamped with webpack's nonce global:
// give it this response's nonce, the one the page's policy allows for styles.
window.__webpack_nonce__ = document.currentScript.nonce;

const NAMESPACE = "graphiql:";
const HEADERS = `${NAMESPACE}headers`;
// The stored values that carry headers, and the list in each whose entries hold
// them: GraphiQL's tabs, and the history plugin's queries and favorites (which
// keep headers whatever `shouldPersistHeaders` says).
const LISTS = {
  [`${NAMESPACE}tabState`]: "tabs",
  [`${NAMESPACE}queries`]: "queries",
  [`${NAMESPACE}favorites`]: "favorites",
};

/** The value to store under `key`, headers removed; null when nothing may be stored. */
function withoutHeaders(key, value) {
  if (key === HEADERS) {
    return null;
  }
  const list = LISTS[key];
  if (list === undefined) {
    return value;
  }
  let parsed;
  try {
    parsed = JSON.parse(value);
  } catch {
    return null; // unreadable, so it cannot be shown to carry no headers
  }
  for (const entry of parsed?.[list] ?? []) {
    delete entry.headers;
  }
  return JSON.stringify(parsed);
}

/** localStorage for GraphiQL's namespace, through which no header is ever written. */
const headerlessStorage = {
  getItem: (key) => localStorage.getItem(key),
  setItem(key, value) {
    const kept = withoutHeaders(key, value);
    if (kept === null) {
      localStorage.removeItem(key);
    } else {
      localStorage.setItem(key, kept);
    }
  },
  removeItem: (key) => localStorage.removeItem(key),
  clear() {
    for (const key of Object.keys(localStorage)) {
      if (key.startsWith(NAMESPACE)) {
        localStorage.removeItem(key);
      }
    }
  },
  get length() {
    return Object.keys(localStorage).filter((key) => key.startsWith(NAMESPACE)).length;
  },
};

// Erase what an earlier GraphiQL page on this origin stored with headers kept.
for (const key of [HEADERS, ...Object.keys(LISTS)]) {
  const stored = localStorage.getItem(key);
  if (stored !== null) {
    headerlessStorage.setItem(key, stored);
  }
}

// /graphql takes a bearer token in the headers editor; /inbox/graphiql runs as the person signed in
// to the inbox (its session cookie, which no script can read), with the page's CSRF token.
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content ?? "";
const url = new URL(meta("mneia-endpoint") || "/graphql", window.location.href);
const csrf = meta("mneia-csrf");
const subscriptionUrl = new URL("/graphql", window.location.href);
subscriptionUrl.protocol = url.protocol === "https:" ? "wss:" : "ws:";
const fetcher = csrf
  ? GraphiQL.createFetcher({ url: url.href, headers: { "X-Mneia-CSRF": csrf } })
  : GraphiQL.createFetcher({ url: url.href, subscriptionUrl: subscriptionUrl.href });

ReactDOM.createRoot(document.getElementById("graphiql")).render(
  React.createElement(GraphiQL, {
    fetcher,
    storage: headerlessStorage,
    shouldPersistHeaders: false,
    // A query that runs as it is, and a note on where the token goes (graphiql/__init__.py).
    defaultQuery: meta("mneia-example"),
    defaultHeaders: meta("mneia-headers"),
    isHeadersEditorEnabled: true,
    defaultEditorToolsVisibility: "headers",
    inputValueDeprecation: true,
  }),
);
