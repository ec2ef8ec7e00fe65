"""Identities and OIDC sign-in (issue 23, part 4, rule R19).

Revision ID: 0015_identity
Revises: 0014_capture
Create Date: 2026-12-02

- ``identities.issuer``/``subject``: the person as an OpenID provider knows them,
  unique together (``identities_oidc``), both or neither; existing identities
  (bootstrapped humans) keep neither.
- ``actors``: the CHECK that only a human has an identity, named
  ``actors_identity_human`` (was ``actors_check``); ``actors_identity``, one
  actor per identity per workspace (led by the identity, to find a person's
  memberships).
- ``invitations``: a tenant table, RLS enabled and forced; its workspace's
  humans read and create them; ``accepted_at`` is now(), set once.
- ``sign_in_states``: a sign-in's single-use values (state, nonce, PKCE
  verifier; a pick), the owner's alone.
- The owner's functions that alone read across workspaces, for one person:
  ``mneia_my_memberships``, ``mneia_sign_in``, ``mneia_sign_in_session``
  (granted to mneia_app, with ``mneia_sign_in_keep``/``_take``), and the
  owner-only policies they read by (``actor_person``, ``workspace_person``,
  ``identity_person``, ``invitation_signing_in``, ``invitation_accept``).
The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0015_identity"
down_revision = "0014_capture"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
