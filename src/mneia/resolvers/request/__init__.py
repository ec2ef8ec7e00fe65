"""The request boundary every GraphQL operation passes through, apart from the noun resolvers.

``context`` (who asks, in which transaction), ``extension`` (one transaction
per operation, committed only without errors), ``document`` with ``cost`` and
``limit`` (what a document may cost before it runs), ``execution`` and
``completion`` (graphql-core's execution with cheaper leaf completion),
``errors`` (the one translation of failures into the contract's codes),
``permission`` (human-only fields) and ``inprocess`` (the API run for a token
without HTTP, for MCP and the inbox).
"""
