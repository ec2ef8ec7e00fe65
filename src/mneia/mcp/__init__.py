"""Mneia as an MCP server (``mneia mcp`` over stdio, ``/mcp`` over Streamable HTTP in ``mneia serve``).

Every tool is a thin wrapper over one or two of the GraphQL API's operations,
sent with the caller's own token, so who may do what and what each caller
sees (row-level security) are exactly the API's. Tools answer the API's
``rendered`` text, within a token budget (``budget``). The Mneia session an
MCP connection writes into is started with the client's ``clientInfo`` from
the handshake (``connection``). A human's token is refused: whatever drives
an MCP client is a model.
"""
