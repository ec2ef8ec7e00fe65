"""Each open invitation's email beside it, one row per invitation (issue 25, R19).

A sign-in found the person's open invitations by reading every workspace's
invitations for the verified email: on Citus a statement over every node. Now
``invitation_emails`` holds each open invitation's email (on Citus a reference
table, on every node, read where the sign-in runs):

- ``mneia_invite`` writes the invitation (under its own policy,
  ``invitation_create``) and its email beside it; it is the server's one way
  to invite, and ``mneia_app`` no longer inserts into ``invitations`` itself;
- ``mneia_sign_in_accept`` removes the email of the invitation it accepts;
- ``mneia_sign_in_invitations`` reads the emails, and each invitation is read
  again by its key when it is accepted;
- the owner's policy ``invitation_email_person`` shows and writes the named
  email's rows only; ``mneia_app`` has no privilege on the table.

The upgrade fills the emails of the invitations open now. The upgrade and
downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0038_invitation_emails"
down_revision = "0037_identity_links"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
