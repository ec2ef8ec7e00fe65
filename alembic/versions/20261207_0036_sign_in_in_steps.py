"""Sign-in in steps that a Citus cluster can run; a person's workspaces named beside them (issue 25).

``mneia_sign_in`` read a person's invitations and actors across workspaces in
one statement, and accepted each invitation bound to its workspace. On Citus
that statement did not plan (a join over the shards of several workspaces),
the person named by ``set_config`` reached no other node, and the acceptance
must run on the node that holds its workspace, where the seal verifies. Now:

- ``mneia_name_person`` names the person by ``SET LOCAL`` (with Citus's
  ``citus.propagate_set_commands = local``, which one server takes as a
  setting of no effect), which Citus sends to every node the transaction
  reads; every owner function reading by the person names it first;
- ``mneia_sign_in_invitations`` lists the open invitations to accept, and
  ``mneia_sign_in_accept`` accepts one, bound to its workspace; the server
  calls them in turn on Citus, each acceptance on its workspace's node, and
  ``mneia_sign_in`` calls them in one round trip on one server;
- ``mneia_sign_in_memberships`` answers the memberships alone, and every step
  begins with ``mneia_signing_person`` (the person named, then found);
- ``mneia_memberships_of`` reads the actors, then their workspaces, each
  table alone, and ``workspace_person`` shows the workspaces it named (a
  setting) instead of reading ``actors``: no longer a policy reading another
  table, so Citus carries it.

What each returns is unchanged; no row is touched. The upgrade and downgrade
are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0036_sign_in_in_steps"
down_revision = "0035_binding_in_keyed_lookups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
