-- Tables, their constraints and indexes.
--
-- Every tenant table leads with workspace_id and has it in its primary key and
-- in every foreign key, so that the tables can later be distributed by
-- workspace. Row-level security and the policies are in visibility.sql; what
-- may change, and who may change it, in authority.sql.
--
-- The value lists of the CHECK constraints are the vocabulary of
-- src/mneia/vocabulary.py; tests/test_declared.py holds them equal.

-- A time-ordered UUID (version 7) for rows created inside the database.
CREATE FUNCTION public.mneia_uuid7() RETURNS uuid
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RETURN encode(
      set_bit(set_bit(
        overlay(uuid_send(gen_random_uuid())
                placing substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                                  FROM 3)
                FROM 1 FOR 6),
        52, 1), 53, 1),
      'hex')::uuid;
  END
  $$;

-- Numbers the announcements of new disputes and proposals (announcements.sql):
-- a subscriber is told a number, never a tenant's ids.
CREATE SEQUENCE announcement_seq;

CREATE TABLE workspaces (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(btrim(name)) > 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Where the workspace's rows live (docs/scale-out.md, Regions): fixed when it is created
  -- (authority.sql refuses an UPDATE); a region's name as config.REGION_PATTERN says.
  region text NOT NULL CONSTRAINT workspaces_region_name
    CHECK (length(region) <= 32 AND region ~ '^[a-z0-9]+(-[a-z0-9]+)*$')
);

-- One person across workspaces; each workspace sees it through its own actor.
CREATE TABLE identities (
  id uuid PRIMARY KEY,
  display_name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- R19 (identity.sql): the person as an OpenID provider knows them, never by email.
  -- NULL for a person no provider has signed in (a bootstrapped workspace's first human).
  issuer text CHECK (length(issuer) BETWEEN 1 AND 500),
  subject text CHECK (length(subject) BETWEEN 1 AND 500),
  CONSTRAINT identities_oidc UNIQUE (issuer, subject),
  CONSTRAINT identities_oidc_whole CHECK ((issuer IS NULL) = (subject IS NULL))
);

CREATE TABLE actors (
  workspace_id uuid NOT NULL REFERENCES workspaces (id),
  id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('HUMAN', 'AGENT')),
  name text NOT NULL CHECK (length(btrim(name)) > 0),
  identity_id uuid REFERENCES identities (id),
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- R18: erased by a human; its name is a pseudonym from then on (storage/sql/privacy.sql).
  erased_at timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, created_by) REFERENCES actors (workspace_id, id),
  -- R19: an agent is never a person's; only a human actor has an identity, for every role.
  CONSTRAINT actors_identity_human CHECK (identity_id IS NULL OR kind = 'HUMAN')
);
-- R19: a person is at most one actor of a workspace. Led by the identity, so that a
-- person's memberships (identity.sql) are found through it too.
CREATE UNIQUE INDEX actors_identity ON actors (identity_id, workspace_id);

CREATE TABLE api_tokens (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  actor_id uuid NOT NULL,
  -- The SHA-256 of the whole token (storage/token.py), which names its workspace:
  -- found by (workspace_id, token_hash), as every row is found by its workspace.
  token_hash text NOT NULL,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  -- The first characters of the secret, enough to tell tokens apart and never
  -- enough to use one; NULL for tokens minted before it was kept.
  hint text CHECK (length(hint) BETWEEN 1 AND 16),
  -- After this instant the token no longer authenticates (mneia_authenticate).
  expires_at timestamptz CHECK (expires_at > created_at),
  revoked_by uuid,
  -- Who created the token's actor, copied when the token is minted
  -- (mneia_copy_creator): what its policies would otherwise read from actors.
  actor_created_by uuid,
  PRIMARY KEY (workspace_id, id),
  UNIQUE (workspace_id, token_hash),
  FOREIGN KEY (workspace_id, actor_id) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, created_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, revoked_by) REFERENCES actors (workspace_id, id),
  CHECK (revoked_by IS NULL OR revoked_at IS NOT NULL)
);
-- Tokens minted before 0024 name no workspace: found by their digest alone.
CREATE INDEX api_tokens_digest ON api_tokens (token_hash);

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
  -- Who created the team, copied when the member is added (mneia_copy_creator).
  team_created_by uuid,
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
  -- Who created the project, copied when the member is added (mneia_copy_creator).
  project_created_by uuid,
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
  -- An imported transcript's own times: the client's word, beside the server's record above.
  transcript_started_at timestamptz,
  transcript_ended_at timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, actor_id) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, client_id) REFERENCES clients (workspace_id, id),
  CHECK (ended_at IS NULL OR ended_at >= started_at),
  CONSTRAINT sessions_transcript_times CHECK (
    transcript_started_at <= started_at AND transcript_ended_at >= transcript_started_at)
);
CREATE INDEX sessions_project ON sessions (workspace_id, project_id, started_at DESC);

CREATE TABLE items (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  project_id uuid NOT NULL,
  kind text NOT NULL
    CHECK (kind IN ('CONSTRAINT', 'DECISION', 'FACT', 'PREFERENCE', 'QUESTION', 'TASK')),
  statement text NOT NULL,
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
  -- When the source said it (an imported transcript's turn, an ADR's date): the
  -- source's word, never later than the server's record of learning it.
  said_at timestamptz CONSTRAINT items_said_before_recorded CHECK (said_at <= asserted_at),
  -- The kinds of credential redacted from its text before it was written (mneia/secrets.py).
  redacted text[] NOT NULL DEFAULT '{}',
  -- R16/R18: its text blanked by retention or erasure (storage/sql/privacy.sql), for good.
  redacted_at timestamptz,
  redaction_reason text CHECK (redaction_reason IN ('retention', 'erasure', 'secret')),
  CONSTRAINT items_statement_present CHECK (length(btrim(statement)) > 0 OR redacted_at IS NOT NULL),
  CONSTRAINT items_redaction_whole CHECK ((redacted_at IS NULL) = (redaction_reason IS NULL)),
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
  -- What a caller chooses stays within what the driver reads back (asyncpg: years 1 to
  -- 9999, intervals up to 999,999,999 days), so no stored value can break a read (F4).
  -- The API refuses far less (schema/scalars.py); the times the server records are now().
  CONSTRAINT items_validity_readable CHECK (
    (valid_from IS NULL OR valid_from BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00')
    AND (valid_to IS NULL OR valid_to BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00')),
  CONSTRAINT items_decay_readable CHECK (decay_after <= interval '999999999 days'),
  CHECK (scope = 'GRANTS' OR cardinality(grant_actor_ids) = 0),
  CHECK ((confirmed_by IS NULL) = (confirmed_at IS NULL)),
  CHECK (supersedes_id IS NULL OR supersession_reason IS NOT NULL)
);
-- Every B-tree here is in ascending order and read backward for newest first: a key that
-- only grows fills its pages as it goes (PostgreSQL splits them where the new key lands),
-- where a DESC key that only grows halves every page it splits (issue 24).
-- The items' indexes lead with the project, not the workspace as well: a project lies in
-- one workspace, so the workspace key told them nothing and cost 16 bytes an entry, a
-- quarter of a page's index (migration 0022). Statements still name the workspace
-- (storage/item.py's tenant), checked on the row; unique keys keep it (the primary key).
CREATE INDEX items_page ON items (project_id, id);
-- (A project's visible items are counted by item_counts, counts.sql, not by an index.)
-- Index-only scans need a fresh visibility map: vacuum items early.
ALTER TABLE items SET (autovacuum_vacuum_scale_factor = 0.02,
                       autovacuum_vacuum_insert_scale_factor = 0.02);
-- An as-of page (R9): the items said by a moment, newest first, found without
-- walking past everything said after it.
CREATE INDEX items_asserted ON items (project_id, asserted_at, id);
CREATE INDEX items_session ON items (session_id) WHERE session_id IS NOT NULL;
-- A text search: the tenant's own matches (btree_gin's key for the project,
-- roles.sql), not every tenant's, which a word common elsewhere would make
-- millions of rows to read and drop. Each key's posting list is read where the
-- word's matches fall, so one key, not two, halves what a word of a few hundred
-- matches costs in a project of a million items.
CREATE INDEX items_search ON items USING gin (project_id, search);
-- Rehydration (R11.9): a task's candidates of one kind among the items still
-- believed, found through the kind's own text index when the task's words are
-- rare or middling (only the kind's matches are read, not every kind's), or
-- walked newest first in the kind's items_live_<kind> when they are common (the
-- match checked on the heap row, stopping at enough); every
-- active load-bearing constraint of a project; the replacements asserted in a
-- window. One B-tree per kind, of ids alone: each grows at one end and stays
-- packed, where one index keyed by kind grew at six places and was half empty
-- (184 MB at 1,000,000 items; the six together 71 MB, benchmarks/scale.py).
CREATE INDEX items_live_constraint ON items (project_id, id)
  WHERE kind = 'CONSTRAINT' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_live_decision ON items (project_id, id)
  WHERE kind = 'DECISION' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_live_fact ON items (project_id, id)
  WHERE kind = 'FACT' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_live_preference ON items (project_id, id)
  WHERE kind = 'PREFERENCE' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_live_question ON items (project_id, id)
  WHERE kind = 'QUESTION' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_live_task ON items (project_id, id)
  WHERE kind = 'TASK' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_search_constraint ON items USING gin (project_id, search)
  WHERE kind = 'CONSTRAINT' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_search_decision ON items USING gin (project_id, search)
  WHERE kind = 'DECISION' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_search_fact ON items USING gin (project_id, search)
  WHERE kind = 'FACT' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_search_preference ON items USING gin (project_id, search)
  WHERE kind = 'PREFERENCE' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_search_question ON items USING gin (project_id, search)
  WHERE kind = 'QUESTION' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_search_task ON items USING gin (project_id, search)
  WHERE kind = 'TASK' AND status IN ('ACTIVE', 'DISPUTED');
CREATE INDEX items_guaranteed ON items (project_id)
  WHERE kind = 'CONSTRAINT' AND status = 'ACTIVE' AND load_bearing;
-- In the order rehydration reads them (newest first, then by id: backward), so that it
-- stops at the few it asks for instead of sorting a month of replacements. Keyed by the
-- workspace too, unlike the others (migration 0023): planned for a big tenant's values,
-- an index without it lost to items_one_successor and a sort of every replacement.
CREATE INDEX items_replacements ON items (workspace_id, project_id, asserted_at, id)
  WHERE supersedes_id IS NOT NULL;
-- A project lies in one workspace: without this the planner multiplies their
-- shares, and takes the project of a workspace of a million items for a small one.
CREATE STATISTICS items_tenancy (dependencies) ON workspace_id, project_id FROM items;
-- items(filter: {statuses: [ACTIVE], authorities: [AGENT_ASSERTED]},
-- orderBy: SUGGESTED_THEN_CONFIDENCE), the inbox's Unconfirmed tab: its first
-- page read in order (the keys are storage/item.py's _order_keys), its count
-- from this index alone, never the project's other items.
CREATE INDEX items_unconfirmed ON items
  (project_id, (NOT load_bearing_suggested), (COALESCE(- confidence, 1)), asserted_at, id)
  WHERE status = 'ACTIVE' AND confirmed_by IS NULL;
-- items(filter: {statuses: [ACTIVE], stale: true}, orderBy: LONGEST_UNCHECKED),
-- the Stale tab: only the active items that can go stale (decayAfter set),
-- the longest unchecked first.
CREATE INDEX items_decaying ON items
  (project_id, (COALESCE(last_verified_at, asserted_at)), id)
  WHERE status = 'ACTIVE' AND decay_after IS NOT NULL;

CREATE TABLE item_events (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT mneia_uuid7(),
  -- Orders the events one UPDATE appends at the same instant.
  seq bigint GENERATED ALWAYS AS IDENTITY,
  item_id uuid NOT NULL,
  actor_id uuid NOT NULL,
  at timestamptz NOT NULL,
  event text NOT NULL CHECK (event IN ('ASSERTED', 'STATUS_CHANGED', 'NOTED', 'CONFIRMED',
    'LOAD_BEARING_SET', 'LOAD_BEARING_CLEARED', 'LOAD_BEARING_SUGGESTED', 'LOAD_BEARING_DECLINED',
    'VERIFIED', 'REDACTED', 'HELD', 'RELEASED')),
  from_status text,
  to_status text NOT NULL,
  load_bearing boolean NOT NULL,
  confirmed boolean NOT NULL,
  reason text,
  data jsonb NOT NULL DEFAULT '{}',
  -- The item's audience, copied as the row is written (by the event log's triggers, else
  -- mneia_copy_audience): who may see it is who may see the item (item_read), from this row alone.
  item_project_id uuid NOT NULL,
  item_scope text NOT NULL,
  item_asserted_by uuid NOT NULL,
  item_grants uuid[],
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, item_id) REFERENCES items (workspace_id, id),
  FOREIGN KEY (workspace_id, actor_id) REFERENCES actors (workspace_id, id)
);
CREATE INDEX item_events_item ON item_events (workspace_id, item_id, at, seq);
-- events(projectId, kinds): the events of some kinds, newest first (the inbox's
-- History), without reading the assertions that make up most of a log.
CREATE INDEX item_events_kind ON item_events (workspace_id, event, at, seq);

-- What an item was, from one instant until the next change (R9): the state
-- columns of items as they stood during [since, until). Written only by the
-- event log trigger (events.sql), one row per instant at which the item
-- changed: the changes one transaction makes share its instant and end as
-- one state, so a moment has exactly one state per item. The current state
-- runs until 'infinity'.
CREATE TABLE item_states (
  workspace_id uuid NOT NULL,
  item_id uuid NOT NULL,
  since timestamptz NOT NULL,
  until timestamptz NOT NULL DEFAULT 'infinity',
  status text NOT NULL,
  status_reason text,
  load_bearing boolean NOT NULL,
  load_bearing_suggested boolean NOT NULL,
  confirmed_by uuid,
  confirmed_at timestamptz,
  last_verified_at timestamptz,
  -- The item's audience, copied as the row is written (by the event log's triggers, else
  -- mneia_copy_audience): who may see it is who may see the item (item_read), from this row alone.
  item_project_id uuid NOT NULL,
  item_scope text NOT NULL,
  item_asserted_by uuid NOT NULL,
  item_grants uuid[],
  PRIMARY KEY (workspace_id, item_id, since),
  FOREIGN KEY (workspace_id, item_id) REFERENCES items (workspace_id, id),
  FOREIGN KEY (workspace_id, confirmed_by) REFERENCES actors (workspace_id, id),
  CHECK (until > since)
);
CREATE UNIQUE INDEX item_states_current ON item_states (workspace_id, item_id) WHERE until = 'infinity';

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
  CHECK (kind = 'LOAD_BEARING' OR replacement IS NOT NULL),
  seq bigint NOT NULL DEFAULT nextval('announcement_seq'),
  -- The target's audience (its project is project_id), copied as the row is written
  -- (mneia_copy_audience).
  target_scope text NOT NULL,
  target_asserted_by uuid NOT NULL,
  target_grants uuid[]
);
CREATE INDEX proposals_project ON proposals (workspace_id, project_id, status, proposed_at DESC);
CREATE INDEX proposals_target ON proposals (workspace_id, target_id);
CREATE UNIQUE INDEX proposals_seq ON proposals (workspace_id, seq);
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
  CHECK (kept_item_id IS NULL OR kept_item_id IN (item_id, contested_id)),
  seq bigint NOT NULL DEFAULT nextval('announcement_seq'),
  -- Both sides' audiences (their project is project_id), copied as the row is written
  -- (mneia_copy_audience).
  item_scope text NOT NULL,
  item_asserted_by uuid NOT NULL,
  item_grants uuid[],
  contested_scope text NOT NULL,
  contested_asserted_by uuid NOT NULL,
  contested_grants uuid[]
);
CREATE INDEX disputes_project ON disputes (workspace_id, project_id, status, raised_at DESC);
CREATE INDEX disputes_item ON disputes (workspace_id, item_id);
CREATE UNIQUE INDEX disputes_one_open_pair ON disputes (workspace_id, item_id, contested_id)
  WHERE status = 'OPEN';
CREATE INDEX disputes_contested ON disputes (workspace_id, contested_id);
CREATE UNIQUE INDEX disputes_seq ON disputes (workspace_id, seq);

-- A handoff: what a session leaves for whoever resumes the work (R12), written
-- once by its checkpoint and never changed. It keeps references, never copies:
-- each reader sees the items, proposals and disputes it names under the
-- reader's own row-level security. One per session; an idempotency key is the
-- author's, so a retry of the same checkpoint finds it.
CREATE TABLE handoffs (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  project_id uuid NOT NULL,
  session_id uuid NOT NULL,
  created_by uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  summary text NOT NULL CHECK (length(btrim(summary)) > 0),
  next_steps text[] NOT NULL DEFAULT '{}',
  open_questions text[] NOT NULL DEFAULT '{}',
  item_ids uuid[] NOT NULL DEFAULT '{}',
  replacement_ids uuid[] NOT NULL DEFAULT '{}',
  proposal_ids uuid[] NOT NULL DEFAULT '{}',
  dispute_ids uuid[] NOT NULL DEFAULT '{}',
  -- The items those replacements, proposals and disputes point at: read in one batch with the rest.
  pointed_ids uuid[] NOT NULL DEFAULT '{}',
  idempotency_key text CHECK (length(idempotency_key) BETWEEN 1 AND 200),
  request_digest text NOT NULL,
  -- Written by the client's model (a compact summary) rather than by a checkpoint call.
  draft boolean NOT NULL DEFAULT false,
  -- The session's actor and project, copied as the row is written (mneia_copy_creator).
  session_actor_id uuid,
  session_project_id uuid,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, session_id) REFERENCES sessions (workspace_id, id),
  FOREIGN KEY (workspace_id, created_by) REFERENCES actors (workspace_id, id),
  CONSTRAINT handoffs_one_per_session UNIQUE (workspace_id, session_id)
);
CREATE UNIQUE INDEX handoffs_idempotency ON handoffs (workspace_id, created_by, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX handoffs_latest ON handoffs (workspace_id, project_id, created_at DESC, id DESC);

-- What each import wrote, by the source's own key (a tool-call id, an ADR's path,
-- a rule's text): importing the same thing twice finds it here and writes nothing.
-- A key of a document (a rules file imported whole) keeps its place in it, so
-- that a re-import pairs an edited rule with the one it replaces.
CREATE TABLE imports (
  workspace_id uuid NOT NULL,
  project_id uuid NOT NULL,
  key text NOT NULL CHECK (length(key) BETWEEN 1 AND 500),
  document text CHECK (length(document) BETWEEN 1 AND 500),
  position integer NOT NULL DEFAULT 0,
  digest text NOT NULL,
  item_id uuid,
  proposal_id uuid,
  imported_by uuid NOT NULL,
  imported_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, project_id, key),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, item_id) REFERENCES items (workspace_id, id),
  FOREIGN KEY (workspace_id, proposal_id) REFERENCES proposals (workspace_id, id),
  FOREIGN KEY (workspace_id, imported_by) REFERENCES actors (workspace_id, id),
  CHECK (item_id IS NOT NULL OR proposal_id IS NOT NULL)
);
CREATE INDEX imports_document ON imports (workspace_id, project_id, document, position)
  WHERE document IS NOT NULL;
