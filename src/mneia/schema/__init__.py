"""The GraphQL types (Strawberry, code-first). Types only: no SQL, no permission checks.

Nested fields load what they point at through per-request DataLoaders, so a
page of items costs a fixed number of queries. An item, dispute or proposal
carries the view it was read in (schema.reading): its fields load through the
view's loaders, which answer as of the view's moment (R9).
"""
