"""The GraphQL types (Strawberry, code-first). Types only: no SQL, no permission checks.

Nested fields load what they point at through ``info.context.loaders``
(per-request DataLoaders), so a page of items costs a fixed number of queries.
"""
