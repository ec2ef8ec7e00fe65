"""Foundation: roles, tenant tables, row-level security, authority triggers.

Revision ID: 0001_foundation
Revises:
Create Date: 2026-11-30

Two roles (R1):
- ``mneia_owner`` (NOLOGIN) owns every object; migrations create them under it.
- ``mneia_app`` (LOGIN) is what the server connects as: it owns nothing, is no
  superuser, has no BYPASSRLS, and has no DELETE on anything.

Every tenant table has RLS ENABLEd and FORCEd, so even the owner is bound by
the policies. Policies read the request's context from transaction-local
settings (``mneia.workspace_id``, ``mneia.actor_id``) through ``nullif(…, '')``
so that a connection with no context sees nothing (fail closed).

Authority (R3) is guarded by triggers as well as by the resolvers: a
confirmation, a load-bearing setting or a decision attributed to an actor
whose record is not HUMAN is refused by the database itself. Every change of
an item's status, confirmation, load-bearing flag or verification appends an
event (R6) from a trigger, so no code path can change an item silently.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy.util import await_only

revision = "0001_foundation"
down_revision = None
branch_labels = None
depends_on = None

OWNER = "mneia_owner"
APP = "mneia_app"

ROLES = f"""
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{OWNER}') THEN
    CREATE ROLE {OWNER} NOLOGIN NOSUPERUSER NOBYPASSRLS;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP}') THEN
    CREATE ROLE {APP} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
  END IF;
END
$$;
GRANT {OWNER} TO CURRENT_USER;
GRANT USAGE, CREATE ON SCHEMA public TO {OWNER};
GRANT USAGE ON SCHEMA public TO {APP};
"""

FUNCTIONS = """
CREATE FUNCTION mneia_workspace() RETURNS uuid
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT nullif(current_setting('mneia.workspace_id', true), '')::uuid $$;

CREATE FUNCTION mneia_actor() RETURNS uuid
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT nullif(current_setting('mneia.actor_id', true), '')::uuid $$;

CREATE FUNCTION mneia_presented_token() RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT nullif(current_setting('mneia.token_hash', true), '') $$;

-- A time-ordered UUID (version 7) for rows created inside the database.
CREATE FUNCTION mneia_uuid7() RETURNS uuid
  LANGUAGE sql VOLATILE
  AS $$
    SELECT encode(
      set_bit(set_bit(
        overlay(uuid_send(gen_random_uuid())
                placing substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                                  FROM 3)
                FROM 1 FOR 6),
        52, 1), 53, 1),
      'hex')::uuid
  $$;
"""

TABLES = """
CREATE TABLE workspaces (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(btrim(name)) > 0),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- One person across workspaces; each workspace sees it through its own actor.
CREATE TABLE identities (
  id uuid PRIMARY KEY,
  display_name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE actors (
  workspace_id uuid NOT NULL REFERENCES workspaces (id),
  id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('HUMAN', 'AGENT')),
  name text NOT NULL CHECK (length(btrim(name)) > 0),
  identity_id uuid REFERENCES identities (id),
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, created_by) REFERENCES actors (workspace_id, id),
  CHECK (identity_id IS NULL OR kind = 'HUMAN')
);

CREATE TABLE api_tokens (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  actor_id uuid NOT NULL,
  token_hash text NOT NULL UNIQUE,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, actor_id) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, created_by) REFERENCES actors (workspace_id, id)
);

CREATE TABLE teams (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  name text NOT NULL CHECK (length(btrim(name)) > 0),
  function text NOT NULL CHECK (length(btrim(function)) > 0),
  created_by uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, created_by) REFERENCES actors (workspace_id, id)
);

CREATE TABLE team_members (
  workspace_id uuid NOT NULL,
  team_id uuid NOT NULL,
  actor_id uuid NOT NULL,
  added_by uuid NOT NULL,
  added_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, team_id, actor_id),
  FOREIGN KEY (workspace_id, team_id) REFERENCES teams (workspace_id, id),
  FOREIGN KEY (workspace_id, actor_id) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, added_by) REFERENCES actors (workspace_id, id)
);
CREATE INDEX team_members_actor ON team_members (workspace_id, actor_id);

CREATE TABLE projects (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  name text NOT NULL CHECK (length(btrim(name)) > 0),
  team_id uuid,
  created_by uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, team_id) REFERENCES teams (workspace_id, id),
  FOREIGN KEY (workspace_id, created_by) REFERENCES actors (workspace_id, id)
);

CREATE TABLE project_members (
  workspace_id uuid NOT NULL,
  project_id uuid NOT NULL,
  actor_id uuid NOT NULL,
  added_by uuid NOT NULL,
  added_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, project_id, actor_id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, actor_id) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, added_by) REFERENCES actors (workspace_id, id)
);
CREATE INDEX project_members_actor ON project_members (workspace_id, actor_id);

CREATE TABLE clients (
  workspace_id uuid NOT NULL REFERENCES workspaces (id),
  id uuid NOT NULL,
  tool text,
  version text,
  PRIMARY KEY (workspace_id, id),
  UNIQUE NULLS NOT DISTINCT (workspace_id, tool, version)
);

CREATE TABLE sessions (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  project_id uuid NOT NULL,
  actor_id uuid NOT NULL,
  client_id uuid,
  external_id text,
  deep_link text,
  task text,
  started_at timestamptz NOT NULL DEFAULT now(),
  ended_at timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, actor_id) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, client_id) REFERENCES clients (workspace_id, id),
  CHECK (ended_at IS NULL OR ended_at >= started_at)
);
CREATE INDEX sessions_project ON sessions (workspace_id, project_id, started_at DESC);

CREATE TABLE items (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  project_id uuid NOT NULL,
  kind text NOT NULL
    CHECK (kind IN ('CONSTRAINT', 'DECISION', 'FACT', 'PREFERENCE', 'QUESTION', 'TASK')),
  statement text NOT NULL CHECK (length(btrim(statement)) > 0),
  details text,
  basis text,
  confidence double precision CHECK (confidence BETWEEN 0 AND 1),
  status text NOT NULL DEFAULT 'ACTIVE'
    CHECK (status IN ('ACTIVE', 'SUPERSEDED', 'DISPUTED', 'RETIRED')),
  status_reason text,
  scope text NOT NULL DEFAULT 'PROJECT'
    CHECK (scope IN ('PRIVATE', 'PROJECT', 'TEAM', 'WORKSPACE', 'GRANTS')),
  grant_actor_ids uuid[] NOT NULL DEFAULT '{}',
  asserted_by uuid NOT NULL,
  asserted_at timestamptz NOT NULL DEFAULT now(),
  session_id uuid,
  valid_from timestamptz,
  valid_to timestamptz,
  decay_after interval,
  last_verified_at timestamptz,
  load_bearing boolean NOT NULL DEFAULT false,
  load_bearing_set_by uuid,
  load_bearing_set_at timestamptz,
  load_bearing_suggested boolean NOT NULL DEFAULT false,
  confirmed_by uuid,
  confirmed_at timestamptz,
  supersedes_id uuid,
  supersession_reason text,
  search tsvector GENERATED ALWAYS AS (
    to_tsvector('english'::regconfig, statement || ' ' || coalesce(details, ''))
  ) STORED,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, asserted_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id),
  FOREIGN KEY (workspace_id, load_bearing_set_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, confirmed_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, supersedes_id) REFERENCES items (workspace_id, id),
  -- R7: a chain never forks: an item is replaced at most once.
  CONSTRAINT items_one_successor UNIQUE (workspace_id, supersedes_id),
  CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_to >= valid_from),
  CHECK (decay_after IS NULL OR decay_after > interval '0'),
  CHECK (scope = 'GRANTS' OR cardinality(grant_actor_ids) = 0),
  CHECK ((confirmed_by IS NULL) = (confirmed_at IS NULL)),
  CHECK (supersedes_id IS NULL OR supersession_reason IS NOT NULL)
);
CREATE INDEX items_page ON items (workspace_id, project_id, id DESC);
-- Covers the visibility policy's columns too, so counting a project's
-- visible items is an index-only scan.
CREATE INDEX items_selection ON items (workspace_id, project_id, status, kind)
  INCLUDE (scope, asserted_by, load_bearing, grant_actor_ids);
-- Index-only scans need a fresh visibility map: vacuum items early.
ALTER TABLE items SET (autovacuum_vacuum_scale_factor = 0.02,
                       autovacuum_vacuum_insert_scale_factor = 0.02);
CREATE INDEX items_session ON items (workspace_id, session_id) WHERE session_id IS NOT NULL;
CREATE INDEX items_search ON items USING gin (search);

CREATE TABLE item_events (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT mneia_uuid7(),
  -- Orders the events one UPDATE appends at the same instant.
  seq bigint GENERATED ALWAYS AS IDENTITY,
  item_id uuid NOT NULL,
  actor_id uuid NOT NULL,
  at timestamptz NOT NULL,
  event text NOT NULL,
  from_status text,
  to_status text NOT NULL,
  load_bearing boolean NOT NULL,
  confirmed boolean NOT NULL,
  reason text,
  data jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, item_id) REFERENCES items (workspace_id, id),
  FOREIGN KEY (workspace_id, actor_id) REFERENCES actors (workspace_id, id)
);
CREATE INDEX item_events_item ON item_events (workspace_id, item_id, at, seq);

CREATE TABLE proposals (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  project_id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('SUPERSESSION', 'LOAD_BEARING')),
  status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'ACCEPTED', 'REJECTED')),
  target_id uuid NOT NULL,
  proposed_by uuid NOT NULL,
  proposed_at timestamptz NOT NULL DEFAULT now(),
  reason text,
  replacement jsonb,
  result_id uuid,
  decided_by uuid,
  decided_at timestamptz,
  decision_note text,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, target_id) REFERENCES items (workspace_id, id),
  FOREIGN KEY (workspace_id, proposed_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, result_id) REFERENCES items (workspace_id, id),
  FOREIGN KEY (workspace_id, decided_by) REFERENCES actors (workspace_id, id),
  CHECK ((status = 'PENDING') = (decided_by IS NULL)),
  CHECK (kind = 'LOAD_BEARING' OR replacement IS NOT NULL)
);
CREATE INDEX proposals_project ON proposals (workspace_id, project_id, status, proposed_at DESC);
CREATE UNIQUE INDEX proposals_one_pending_load_bearing ON proposals (workspace_id, target_id)
  WHERE kind = 'LOAD_BEARING' AND status = 'PENDING';

CREATE TABLE disputes (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  project_id uuid NOT NULL,
  status text NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'RESOLVED')),
  item_id uuid NOT NULL,
  contested_id uuid NOT NULL,
  raised_by uuid NOT NULL,
  raised_at timestamptz NOT NULL DEFAULT now(),
  reason text,
  resolved_by uuid,
  resolved_at timestamptz,
  kept_item_id uuid,
  resolution_note text,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, item_id) REFERENCES items (workspace_id, id),
  FOREIGN KEY (workspace_id, contested_id) REFERENCES items (workspace_id, id),
  FOREIGN KEY (workspace_id, raised_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, resolved_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, kept_item_id) REFERENCES items (workspace_id, id),
  CHECK (item_id <> contested_id),
  CHECK ((status = 'OPEN') = (resolved_by IS NULL)),
  CHECK (kept_item_id IS NULL OR kept_item_id IN (item_id, contested_id))
);
CREATE INDEX disputes_project ON disputes (workspace_id, project_id, status, raised_at DESC);
CREATE INDEX disputes_item ON disputes (workspace_id, item_id);
CREATE UNIQUE INDEX disputes_one_open_pair ON disputes (workspace_id, item_id, contested_id)
  WHERE status = 'OPEN';
CREATE INDEX disputes_contested ON disputes (workspace_id, contested_id);
"""

# Functions the policies call. They run as the caller, so the tables they
# read are themselves filtered by RLS; wrapped in a scalar sub-select in the
# policies, each is evaluated once per statement, not once per row.
POLICY_FUNCTIONS = """
CREATE FUNCTION mneia_actor_is_human() RETURNS boolean
  LANGUAGE sql STABLE
  AS $$
    SELECT EXISTS (SELECT 1 FROM actors
                   WHERE workspace_id = mneia_workspace() AND id = mneia_actor() AND kind = 'HUMAN')
  $$;

CREATE FUNCTION mneia_is_human(candidate uuid) RETURNS boolean
  LANGUAGE sql STABLE
  AS $$
    SELECT EXISTS (SELECT 1 FROM actors
                   WHERE workspace_id = mneia_workspace() AND id = candidate AND kind = 'HUMAN')
  $$;

-- Projects the current actor is a direct member of.
CREATE FUNCTION mneia_member_projects() RETURNS uuid[]
  LANGUAGE sql STABLE
  AS $$
    SELECT coalesce(array_agg(project_id), '{}') FROM project_members
    WHERE workspace_id = mneia_workspace() AND actor_id = mneia_actor()
  $$;

-- Projects the current actor works in: a direct member, or a member of the project's team.
CREATE FUNCTION mneia_team_projects() RETURNS uuid[]
  LANGUAGE sql STABLE
  AS $$
    SELECT coalesce(array_agg(p.id), '{}') FROM projects p
    WHERE p.workspace_id = mneia_workspace()
      AND (p.id IN (SELECT project_id FROM project_members
                    WHERE workspace_id = mneia_workspace() AND actor_id = mneia_actor())
           OR p.team_id IN (SELECT team_id FROM team_members
                            WHERE workspace_id = mneia_workspace() AND actor_id = mneia_actor()))
  $$;
"""

TENANT_TABLES = (
    "workspaces",
    "identities",
    "actors",
    "api_tokens",
    "teams",
    "team_members",
    "projects",
    "project_members",
    "clients",
    "sessions",
    "items",
    "item_events",
    "proposals",
    "disputes",
)

# R2: who sees an item. The asserter always does; then by scope, each scope
# including the narrower ones (PROJECT ⊂ TEAM ⊂ WORKSPACE). Every function is
# wrapped in a scalar sub-select so it is evaluated once per statement, not
# once per row.
ITEM_VISIBLE = """
  workspace_id = (SELECT mneia_workspace()) AND (
    asserted_by = (SELECT mneia_actor())
    OR scope = 'WORKSPACE'
    OR (scope = 'PROJECT' AND project_id = ANY ((SELECT mneia_member_projects())::uuid[]))
    OR (scope = 'TEAM' AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
    OR (scope = 'GRANTS' AND (SELECT mneia_actor()) = ANY (grant_actor_ids))
  )
"""

POLICIES = f"""
CREATE POLICY workspace_self ON workspaces FOR SELECT USING (id = mneia_workspace());

-- Minting a workspace and its first human is an administrator's act
-- (`mneia admin bootstrap`), done as the owner role with the context set.
CREATE POLICY workspace_bootstrap ON workspaces FOR INSERT TO {OWNER}
  WITH CHECK (id = mneia_workspace());
CREATE POLICY identity_bootstrap ON identities FOR INSERT TO {OWNER} WITH CHECK (true);
CREATE POLICY actor_bootstrap ON actors FOR INSERT TO {OWNER}
  WITH CHECK (workspace_id = mneia_workspace() AND kind = 'HUMAN');
CREATE POLICY token_bootstrap ON api_tokens FOR INSERT TO {OWNER}
  WITH CHECK (workspace_id = mneia_workspace());

CREATE POLICY identity_seen ON identities FOR SELECT USING (
  EXISTS (SELECT 1 FROM actors a WHERE a.identity_id = identities.id));

CREATE POLICY actor_read ON actors FOR SELECT USING (workspace_id = mneia_workspace());
CREATE POLICY actor_create ON actors FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace() AND created_by = mneia_actor()
  AND (SELECT mneia_actor_is_human()));

-- A token row is visible to its own actor, and to whoever presents its secret
-- (authentication reads it before any workspace context exists).
CREATE POLICY token_read ON api_tokens FOR SELECT USING (
  (workspace_id = mneia_workspace() AND actor_id = mneia_actor())
  OR token_hash = mneia_presented_token());
CREATE POLICY token_create ON api_tokens FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace() AND created_by = mneia_actor()
  AND (SELECT mneia_actor_is_human()));
CREATE POLICY token_revoke ON api_tokens FOR UPDATE
  USING (workspace_id = mneia_workspace() AND actor_id = mneia_actor())
  WITH CHECK (workspace_id = mneia_workspace());

CREATE POLICY team_read ON teams FOR SELECT USING (workspace_id = mneia_workspace());
CREATE POLICY team_create ON teams FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace() AND created_by = mneia_actor()
  AND (SELECT mneia_actor_is_human()));

CREATE POLICY team_member_read ON team_members FOR SELECT USING (workspace_id = mneia_workspace());
CREATE POLICY team_member_add ON team_members FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace() AND added_by = mneia_actor()
  AND (SELECT mneia_actor_is_human())
  AND (EXISTS (SELECT 1 FROM team_members m WHERE m.workspace_id = team_members.workspace_id
                 AND m.team_id = team_members.team_id AND m.actor_id = mneia_actor())
       OR EXISTS (SELECT 1 FROM teams t WHERE t.workspace_id = team_members.workspace_id
                    AND t.id = team_members.team_id AND t.created_by = mneia_actor())));

CREATE POLICY project_read ON projects FOR SELECT USING (workspace_id = mneia_workspace());
CREATE POLICY project_create ON projects FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace() AND created_by = mneia_actor()
  AND (SELECT mneia_actor_is_human()));

CREATE POLICY project_member_read ON project_members FOR SELECT
  USING (workspace_id = mneia_workspace());
CREATE POLICY project_member_add ON project_members FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace() AND added_by = mneia_actor()
  AND (SELECT mneia_actor_is_human())
  AND (project_id = ANY ((SELECT mneia_team_projects())::uuid[])
       OR EXISTS (SELECT 1 FROM projects p WHERE p.workspace_id = project_members.workspace_id
                    AND p.id = project_members.project_id AND p.created_by = mneia_actor())));

CREATE POLICY client_read ON clients FOR SELECT USING (workspace_id = mneia_workspace());
CREATE POLICY client_create ON clients FOR INSERT WITH CHECK (workspace_id = mneia_workspace());

CREATE POLICY session_read ON sessions FOR SELECT USING (workspace_id = mneia_workspace());
CREATE POLICY session_start ON sessions FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace() AND actor_id = mneia_actor()
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]));
CREATE POLICY session_end ON sessions FOR UPDATE
  USING (workspace_id = mneia_workspace()
         AND (actor_id = mneia_actor() OR (SELECT mneia_actor_is_human())))
  WITH CHECK (workspace_id = mneia_workspace());

CREATE POLICY item_read ON items FOR SELECT USING ({ITEM_VISIBLE});
-- Writing needs membership of the project (directly or through its team).
-- An item is asserted by the caller, except when a human writes it already
-- confirmed by themselves (accepting an agent's proposal).
CREATE POLICY item_assert ON items FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace()
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[])
  AND (asserted_by = mneia_actor()
       OR (confirmed_by = mneia_actor() AND (SELECT mneia_actor_is_human()))));
CREATE POLICY item_change ON items FOR UPDATE
  USING ({ITEM_VISIBLE} AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
  WITH CHECK (workspace_id = mneia_workspace());

CREATE POLICY item_event_read ON item_events FOR SELECT USING (
  workspace_id = mneia_workspace()
  AND EXISTS (SELECT 1 FROM items i WHERE i.workspace_id = item_events.workspace_id
                AND i.id = item_events.item_id));
CREATE POLICY item_event_append ON item_events FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace() AND actor_id IS NOT NULL);

CREATE POLICY proposal_read ON proposals FOR SELECT USING (
  workspace_id = mneia_workspace()
  AND EXISTS (SELECT 1 FROM items i WHERE i.workspace_id = proposals.workspace_id
                AND i.id = proposals.target_id));
CREATE POLICY proposal_raise ON proposals FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace() AND proposed_by = mneia_actor()
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]));
CREATE POLICY proposal_decide ON proposals FOR UPDATE
  USING (workspace_id = mneia_workspace() AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
  WITH CHECK (workspace_id = mneia_workspace());

-- A dispute shows both sides, so it is visible only to whoever sees both.
CREATE POLICY dispute_read ON disputes FOR SELECT USING (
  workspace_id = mneia_workspace()
  AND EXISTS (SELECT 1 FROM items i WHERE i.workspace_id = disputes.workspace_id
                AND i.id = disputes.item_id)
  AND EXISTS (SELECT 1 FROM items i WHERE i.workspace_id = disputes.workspace_id
                AND i.id = disputes.contested_id));
CREATE POLICY dispute_raise ON disputes FOR INSERT WITH CHECK (
  workspace_id = mneia_workspace() AND raised_by = mneia_actor()
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]));
CREATE POLICY dispute_resolve ON disputes FOR UPDATE
  USING (workspace_id = mneia_workspace() AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
  WITH CHECK (workspace_id = mneia_workspace());
"""

# Authentication in one round trip: reveal the presented token's row (the
# token_read policy), bind the transaction to its workspace and actor, and
# return that actor. Runs as the caller, under every policy.
AUTHENTICATE = """
CREATE FUNCTION mneia_authenticate(presented text)
  RETURNS TABLE (workspace_id uuid, id uuid, kind text, name text, created_at timestamptz)
  LANGUAGE plpgsql VOLATILE
  AS $$
  DECLARE
    found_workspace uuid;
    found_actor uuid;
  BEGIN
    PERFORM set_config('mneia.token_hash', presented, true);
    SELECT t.workspace_id, t.actor_id INTO found_workspace, found_actor
      FROM api_tokens t WHERE t.token_hash = presented AND t.revoked_at IS NULL;
    PERFORM set_config('mneia.token_hash', '', true);
    IF found_actor IS NULL THEN
      RETURN;
    END IF;
    PERFORM set_config('mneia.workspace_id', found_workspace::text, true),
            set_config('mneia.actor_id', found_actor::text, true);
    RETURN QUERY SELECT a.workspace_id, a.id, a.kind, a.name, a.created_at FROM actors a
      WHERE a.workspace_id = found_workspace AND a.id = found_actor;
  END
  $$;
"""

# R3: authority can only be minted by the human it is attributed to.
TRIGGERS = """
CREATE FUNCTION mneia_require_human(who uuid, what text) RETURNS void
  LANGUAGE plpgsql STABLE
  AS $$
  BEGIN
    IF who IS NULL OR who IS DISTINCT FROM mneia_actor() OR NOT mneia_is_human(who) THEN
      RAISE EXCEPTION 'HUMAN_REQUIRED: % must be by the human making the request', what
        USING ERRCODE = 'insufficient_privilege';
    END IF;
  END
  $$;

CREATE FUNCTION mneia_items_guard() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
  BEGIN
    IF TG_OP = 'INSERT' THEN
      IF NEW.confirmed_by IS NOT NULL THEN
        PERFORM mneia_require_human(NEW.confirmed_by, 'a confirmation');
      END IF;
      IF NEW.load_bearing THEN
        PERFORM mneia_require_human(NEW.load_bearing_set_by, 'a load-bearing setting');
      END IF;
    ELSE
      IF NEW.confirmed_by IS DISTINCT FROM OLD.confirmed_by
         OR NEW.confirmed_at IS DISTINCT FROM OLD.confirmed_at THEN
        PERFORM mneia_require_human(NEW.confirmed_by, 'a confirmation');
      END IF;
      IF NEW.load_bearing IS DISTINCT FROM OLD.load_bearing
         OR NEW.load_bearing_set_by IS DISTINCT FROM OLD.load_bearing_set_by THEN
        PERFORM mneia_require_human(NEW.load_bearing_set_by, 'a load-bearing setting');
      END IF;
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER items_guard BEFORE INSERT OR UPDATE ON items
  FOR EACH ROW EXECUTE FUNCTION mneia_items_guard();

-- R6: every transition of an item appends an event. SECURITY DEFINER so that
-- the server's role needs (and has) no INSERT on item_events: events come
-- from real transitions only.
CREATE FUNCTION mneia_items_log() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
  AS $$
  DECLARE
    who uuid := coalesce(mneia_actor(), NEW.asserted_by);
    confirmed boolean := NEW.confirmed_by IS NOT NULL;
  BEGIN
    IF TG_OP = 'INSERT' THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed, reason, data)
      VALUES (NEW.workspace_id, NEW.id, NEW.asserted_by, NEW.asserted_at, 'ASSERTED', NULL,
              NEW.status,
              NEW.load_bearing AND NEW.load_bearing_set_at <= NEW.asserted_at,
              confirmed AND NEW.confirmed_at <= NEW.asserted_at,
              NEW.supersession_reason,
              jsonb_build_object('supersedes', NEW.supersedes_id, 'session', NEW.session_id));
      IF confirmed AND NEW.confirmed_at > NEW.asserted_at THEN
        INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                 load_bearing, confirmed)
        VALUES (NEW.workspace_id, NEW.id, NEW.confirmed_by, NEW.confirmed_at, 'CONFIRMED',
                NEW.status, NEW.status, NEW.load_bearing AND NEW.load_bearing_set_at <= NEW.confirmed_at,
                true);
      END IF;
      IF NEW.load_bearing AND NEW.load_bearing_set_at > NEW.asserted_at THEN
        INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                 load_bearing, confirmed)
        VALUES (NEW.workspace_id, NEW.id, NEW.load_bearing_set_by, NEW.load_bearing_set_at,
                'LOAD_BEARING_SET', NEW.status, NEW.status, true, confirmed);
      END IF;
      RETURN NEW;
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed, reason)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'STATUS_CHANGED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed, NEW.status_reason);
    END IF;
    IF NEW.status_reason IS DISTINCT FROM OLD.status_reason
       AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed, reason)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'NOTED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed, NEW.status_reason);
    END IF;
    IF NEW.confirmed_by IS DISTINCT FROM OLD.confirmed_by THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'CONFIRMED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed);
    END IF;
    IF NEW.load_bearing IS DISTINCT FROM OLD.load_bearing THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(),
              CASE WHEN NEW.load_bearing THEN 'LOAD_BEARING_SET' ELSE 'LOAD_BEARING_CLEARED' END,
              OLD.status, NEW.status, NEW.load_bearing, confirmed);
    END IF;
    IF NEW.load_bearing_suggested AND NOT OLD.load_bearing_suggested THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'LOAD_BEARING_SUGGESTED', OLD.status,
              NEW.status, NEW.load_bearing, confirmed);
    END IF;
    IF NEW.last_verified_at IS DISTINCT FROM OLD.last_verified_at THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'VERIFIED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed);
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER items_log AFTER INSERT OR UPDATE ON items
  FOR EACH ROW EXECUTE FUNCTION mneia_items_log();

CREATE FUNCTION mneia_proposals_guard() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
  BEGIN
    IF NEW.decided_by IS DISTINCT FROM OLD.decided_by OR NEW.status IS DISTINCT FROM OLD.status THEN
      PERFORM mneia_require_human(NEW.decided_by, 'a proposal decision');
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER proposals_guard BEFORE UPDATE ON proposals
  FOR EACH ROW EXECUTE FUNCTION mneia_proposals_guard();

CREATE FUNCTION mneia_disputes_guard() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
  BEGIN
    IF NEW.resolved_by IS DISTINCT FROM OLD.resolved_by OR NEW.status IS DISTINCT FROM OLD.status THEN
      PERFORM mneia_require_human(NEW.resolved_by, 'a dispute resolution');
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER disputes_guard BEFORE UPDATE ON disputes
  FOR EACH ROW EXECUTE FUNCTION mneia_disputes_guard();
"""

# R15: a raised dispute or proposal is announced to every server process.
# NOTIFY ignores row-level security, so the payload carries ids only; each
# subscriber re-reads the row under its own context before seeing anything.
NOTIFICATIONS = """
CREATE FUNCTION mneia_announce() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
  BEGIN
    PERFORM pg_notify('mneia', json_build_object(
      'kind', TG_ARGV[0], 'workspace', NEW.workspace_id, 'project', NEW.project_id, 'id', NEW.id)::text);
    RETURN NULL;
  END
  $$;

CREATE TRIGGER disputes_announce AFTER INSERT ON disputes
  FOR EACH ROW EXECUTE FUNCTION mneia_announce('dispute');
CREATE TRIGGER proposals_announce AFTER INSERT ON proposals
  FOR EACH ROW EXECUTE FUNCTION mneia_announce('proposal');
"""

# The server's role: read and append, a few columns updatable, never DELETE.
GRANTS = f"""
GRANT SELECT ON workspaces, identities, actors, teams, team_members, projects, project_members,
  clients, sessions, items, item_events, proposals, disputes TO {APP};
GRANT SELECT (workspace_id, id, actor_id, token_hash, created_by, created_at, revoked_at)
  ON api_tokens TO {APP};
GRANT INSERT ON actors, api_tokens, teams, team_members, projects, project_members, clients,
  sessions, items, proposals, disputes TO {APP};
GRANT UPDATE (revoked_at) ON api_tokens TO {APP};
GRANT UPDATE (ended_at) ON sessions TO {APP};
GRANT UPDATE (status, status_reason, load_bearing, load_bearing_set_by, load_bearing_set_at,
  load_bearing_suggested, confirmed_by, confirmed_at, last_verified_at) ON items TO {APP};
GRANT UPDATE (status, result_id, decided_by, decided_at, decision_note) ON proposals TO {APP};
GRANT UPDATE (status, resolved_by, resolved_at, kept_item_id, resolution_note) ON disputes TO {APP};
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO {APP};
"""


def _script(sql: str) -> None:
    """Run several statements at once (asyncpg prepares single statements only)."""
    await_only(op.get_bind().connection.driver_connection.execute(sql))


def upgrade() -> None:
    _script(ROLES)
    _script(f"SET LOCAL ROLE {OWNER}")
    _script(FUNCTIONS)
    _script(TABLES)
    _script(POLICY_FUNCTIONS)
    for table in TENANT_TABLES:
        _script(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        _script(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    _script(POLICIES)
    _script(TRIGGERS)
    _script(AUTHENTICATE)
    _script(NOTIFICATIONS)
    _script(GRANTS)
    _script("RESET ROLE")


def downgrade() -> None:
    _script(f"SET LOCAL ROLE {OWNER}")
    for table in reversed(TENANT_TABLES):
        _script(f"DROP TABLE IF EXISTS {table} CASCADE")
    for function in (
        "mneia_announce()",
        "mneia_authenticate(text)",
        "mneia_disputes_guard()",
        "mneia_proposals_guard()",
        "mneia_items_log()",
        "mneia_items_guard()",
        "mneia_require_human(uuid, text)",
        "mneia_team_projects()",
        "mneia_member_projects()",
        "mneia_is_human(uuid)",
        "mneia_actor_is_human()",
        "mneia_uuid7()",
        "mneia_presented_token()",
        "mneia_actor()",
        "mneia_workspace()",
    ):
        _script(f"DROP FUNCTION IF EXISTS {function}")
    _script("RESET ROLE")
    _script(f"REVOKE ALL ON SCHEMA public FROM {APP}, {OWNER}")
    # The roles are cluster-wide: drop them only when no other database uses them.
    _script(
        f"""
        DO $$
        BEGIN
          DROP ROLE IF EXISTS {APP};
          DROP ROLE IF EXISTS {OWNER};
        EXCEPTION WHEN dependent_objects_still_exist THEN
          RAISE NOTICE 'mneia roles kept: another database still uses them';
        END
        $$;
        """
    )
