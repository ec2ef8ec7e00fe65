"""mneia_linked_actors reads by the person its caller named (0037 had it name the person itself).

It is a helper of the owner's functions, never granted to the server's role,
and each caller names the person before it anyway. Naming them again inside
cleared what the caller had named beside them (the email a sign-in reads
invitations by), which ``mneia_sign_in_invitations`` then named once more;
``mneia_memberships_of`` named them after the helper instead of before. Now
each caller names the person once, first. What every function returns is
unchanged. The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0039_links_read_as_named"
down_revision = "0038_invitation_emails"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
