-- The regions' directory (docs/scale-out.md, Regions): a database of its own,
-- apart from every region's, that says which region holds each workspace and
-- which workspaces each person belongs to, by ids only. No name, no email, no
-- content: what it holds leaves no region's residency. Created and upgraded by
-- `mneia migrate` when MNEIA_DIRECTORY_URL is set (storage/directory.py, which
-- numbers these steps); written by `mneia admin bootstrap` and by the servers'
-- OpenID sign-ins, read by those sign-ins (storage/directory.py, Directory).

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

-- Version 2.
-- Where each region's people sign in: its servers' public address (MNEIA_PUBLIC_URL), recorded
-- by a server of the region at each OpenID sign-in it finishes. A person signing in at one region
-- is sent there for the workspaces of another.
CREATE TABLE directory_regions (
  name text PRIMARY KEY CONSTRAINT directory_regions_name
    CHECK (length(name) <= 32 AND name ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
  sign_in_url text NOT NULL CONSTRAINT directory_regions_url CHECK (sign_in_url ~ '^https?://'),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- A person as their OpenID provider names them, by a keyed digest of issuer and subject (the
-- key is derived from the provider client's secret, which this database does not hold:
-- inbox/oidc.py), and the workspaces they were a member of when they last signed in at each
-- workspace's region. No name, no email, no subject: a row says only that some person belongs
-- to a workspace.
CREATE TABLE directory_people (
  person bytea NOT NULL CONSTRAINT directory_people_digest CHECK (octet_length(person) = 32),
  workspace_id uuid NOT NULL REFERENCES directory_workspaces (id) ON DELETE CASCADE,
  PRIMARY KEY (person, workspace_id)
);
CREATE INDEX directory_people_workspace ON directory_people (workspace_id);

-- Version 3.
-- An open invitation, by a keyed digest of the invited email (keyed as directory_people's
-- person, the key not here), so that a person invited in one region and signing in at another
-- region's server is sent there. Written by the server that created the invitation, just after
-- it; deleted once a sign-in at the workspace's region finds the person a member; ignored once
-- expired.
CREATE TABLE directory_invitations (
  email bytea NOT NULL CONSTRAINT directory_invitations_digest CHECK (octet_length(email) = 32),
  workspace_id uuid NOT NULL REFERENCES directory_workspaces (id) ON DELETE CASCADE,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (email, workspace_id)
);
CREATE INDEX directory_invitations_workspace ON directory_invitations (workspace_id);
