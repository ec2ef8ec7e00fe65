"""Each person's links to their actors, one row per identity and workspace (issue 25, R19).

A person's memberships (``myMemberships``, an OpenID sign-in's choice of
workspace, the invitations it may accept) were found by reading every
workspace's actors for the person's identity: on Citus a statement over every
node, the one read of the request path that stated no workspace. Now
``identity_links`` says where a person has an actor (on Citus a reference
table, on every node, read where the request runs), and each actor and
workspace is then read by its key:

- ``mneia_bootstrap`` and ``mneia_sign_in_accept`` write the link beside the
  actor they link, ``mneia_erase_actor`` removes it with the person's link;
- ``mneia_memberships_of`` and ``mneia_sign_in_invitations`` read the links;
- the owner's policy ``identity_link_person`` shows and writes the named
  person's links only; ``mneia_app`` has no privilege on the table.

The upgrade fills the links from the actors linked now. The upgrade and
downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0037_identity_links"
down_revision = "0036_sign_in_in_steps"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
