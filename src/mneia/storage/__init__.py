"""Storage: all SQL, the per-request transaction and its row-level-security context."""
