SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
ALTER TABLE items ADD COLUMN said_at timestamp with time zone;
ALTER TABLE items ADD COLUMN redacted text[] DEFAULT '{}'::text[] NOT NULL;
ALTER TABLE items ADD CONSTRAINT items_said_before_recorded CHECK ((said_at <= asserted_at));
ALTER TABLE sessions ADD COLUMN transcript_started_at timestamp with time zone;
ALTER TABLE sessions ADD COLUMN transcript_ended_at timestamp with time zone;
ALTER TABLE sessions ADD CONSTRAINT sessions_transcript_times CHECK (((transcript_started_at <= started_at) AND (transcript_ended_at >= transcript_started_at)));
ALTER TABLE handoffs ADD COLUMN draft boolean DEFAULT false NOT NULL;
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
ALTER TABLE imports ENABLE ROW LEVEL SECURITY;
ALTER TABLE imports FORCE ROW LEVEL SECURITY;
CREATE POLICY import_read ON imports AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))));
CREATE POLICY import_rewrite ON imports AS PERMISSIVE FOR UPDATE TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[])))) WITH CHECK ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY import_write ON imports AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (imported_by = ( SELECT mneia_actor() AS mneia_actor)) AND (imported_at = now()) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))));
GRANT SELECT, INSERT ON imports TO mneia_app;
GRANT UPDATE (document, position, digest, item_id, proposal_id) ON imports TO mneia_app;
GRANT UPDATE (transcript_ended_at) ON sessions TO mneia_app;
RESET ROLE;
