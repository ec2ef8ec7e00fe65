-- The regions' directory (docs/scale-out.md, Regions): a database of its own,
-- apart from every region's, that says which region holds each workspace and
-- which workspaces each person belongs to, by ids only. No name, no email, no
-- content: what it holds leaves no region's residency. Created and upgraded by
-- `mneia migrate` when MNEIA_DIRECTORY_URL is set (storage/directory.py, which
-- numbers these steps); written by `mneia admin bootstrap`.

-- Version 1.
CREATE TABLE directory_workspaces (
  id uuid PRIMARY KEY,
  region text NOT NULL CONSTRAINT directory_workspaces_region_name
    CHECK (length(region) <= 32 AND region ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- A person (a region's identities.id); the same person in two regions is two ids today.
CREATE TABLE directory_identities (
  id uuid PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Which workspaces a person belongs to: what a sign-in needs to ask each region.
CREATE TABLE directory_memberships (
  identity_id uuid NOT NULL REFERENCES directory_identities (id),
  workspace_id uuid NOT NULL REFERENCES directory_workspaces (id),
  PRIMARY KEY (identity_id, workspace_id)
);
CREATE INDEX directory_memberships_workspace ON directory_memberships (workspace_id);
