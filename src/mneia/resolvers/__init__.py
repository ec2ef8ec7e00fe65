"""GraphQL entry points: turn calls into storage calls and decide who may do what."""
