-- What the server's role may do (R1, R6): read and append, update a few
-- columns, never DELETE, never create. Functions are private unless listed:
-- mneia_app may call the accessors the policies use, the helpers the guards
-- use, and mneia_authenticate and mneia_channel; never what seals a context,
-- binds one, or names another workspace's channel.

GRANT SELECT ON workspaces, identities, actors, teams, team_members, projects, project_members,
  clients, sessions, items, item_events, item_states, proposals, disputes, handoffs, imports TO mneia_app;
GRANT SELECT (workspace_id, id, actor_id, token_hash, created_by, created_at, revoked_at, hint,
  expires_at, revoked_by) ON api_tokens TO mneia_app;
GRANT INSERT ON actors, api_tokens, teams, team_members, projects, project_members, clients,
  sessions, items, proposals, disputes, handoffs, imports TO mneia_app;
GRANT UPDATE (revoked_at, revoked_by) ON api_tokens TO mneia_app;
GRANT UPDATE (ended_at, transcript_ended_at) ON sessions TO mneia_app;
GRANT UPDATE (document, position, digest, item_id, proposal_id) ON imports TO mneia_app;
GRANT UPDATE (status, status_reason, load_bearing, load_bearing_set_by, load_bearing_set_at,
  load_bearing_suggested, confirmed_by, confirmed_at, last_verified_at) ON items TO mneia_app;
GRANT UPDATE (status, result_id, decided_by, decided_at, decision_note) ON proposals TO mneia_app;
GRANT UPDATE (status, resolved_by, resolved_at, kept_item_id, resolution_note) ON disputes TO mneia_app;
GRANT USAGE ON SEQUENCE announcement_seq TO mneia_app;
-- Privacy (privacy.sql): policies and holds are read by all, written by humans (their policies).
GRANT SELECT, INSERT ON retention_policies, legal_holds TO mneia_app;
GRANT UPDATE (removed_by, removed_at) ON retention_policies TO mneia_app;
GRANT UPDATE (released_by, released_at) ON legal_holds TO mneia_app;
-- Counts (counts.sql): read under their policy; kept by the owner's trigger alone.
GRANT SELECT ON item_counts TO mneia_app;

-- New functions of the owner's are private too, until a migration grants them.
ALTER DEFAULT PRIVILEGES FOR ROLE mneia_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
  mneia_authenticate(text, uuid),
  mneia_channel(),
  mneia_sealed(),
  mneia_context_field(text),
  mneia_workspace(),
  mneia_actor(),
  mneia_actor_is_human(),
  mneia_member_projects(),
  mneia_member_teams(),
  mneia_team_projects(),
  mneia_token_expires(),
  mneia_trusted_session(),
  mneia_refuse(text),
  mneia_disallow(text, text),
  mneia_require_human(uuid, text),
  mneia_require_now(timestamptz, text),
  mneia_has_successor(uuid, uuid),
  mneia_open_disputes(uuid, uuid),
  mneia_kept_by_resolution(uuid, uuid),
  mneia_replacement_matches(proposals, items),
  mneia_keeps_audience(items, items),
  mneia_uuid7(),
  mneia_held(uuid, uuid, uuid),
  mneia_erase_actor(uuid)
  TO mneia_app;

-- Identity (R19, identity.sql): a workspace's humans invite people; a person's
-- memberships and the steps of a sign-in are reached only through the owner's
-- functions, never by reading another workspace's rows.
GRANT SELECT ON invitations TO mneia_app;
GRANT EXECUTE ON FUNCTION
  mneia_invite(text, interval),
  mneia_my_memberships(),
  mneia_identities_of(uuid[]),
  mneia_sign_in(text, text, text, text),
  mneia_sign_in_invitations(text, text, text),
  mneia_sign_in_accept(text, text, text, text, uuid, uuid),
  mneia_sign_in_memberships(text, text),
  mneia_sign_in_session(text, text, uuid, text, text, interval),
  mneia_sign_in_keep(text, text, integer),
  mneia_sign_in_take(text)
  TO mneia_app;
