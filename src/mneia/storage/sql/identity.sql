-- Identities, invitations and sign-in (R19).
--
-- One person is one identity: an OpenID provider's issuer and subject, never
-- an email (identities, tables.sql), and at most one HUMAN actor of each
-- workspace (actors_identity). An agent is never a person's
-- (actors_identity_human, for every role).
--
-- A workspace never learns another workspace's actors or names. Every read
-- across workspaces happens in the functions below, owned by mneia_owner
-- (SECURITY DEFINER, their own search_path), and each answers only one
-- person's memberships (the workspace's id and name, the actor's id and
-- name): the caller's own (mneia_my_memberships, bound by a token), or the
-- person the server's sign-in names by issuer and subject once it has
-- validated the provider's ID token (mneia_sign_in, mneia_sign_in_session).
-- The policies that let them read across workspaces are the owner's alone
-- and match only the person the running function names in transaction-local
-- settings (mneia_person), set and cleared by it, as token_presented matches
-- the presented token (context.sql): they widen nothing mneia_app reads.
--
-- The database cannot check an ID token's signature, so sign-in trusts the
-- server's word for who signed in: whoever holds mneia_app's password can
-- sign in as a person whose issuer and subject it knows (docs/identity.md).

-- An invitation: a workspace's human asks a person, by email, to join it. The
-- first sign-in whose provider verified that email accepts it, once: it
-- creates the person's identity (if new) and a HUMAN actor of the workspace;
-- from then on the person is found by issuer and subject, never by email.
CREATE TABLE invitations (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  email text NOT NULL CONSTRAINT invitations_email_normal
    CHECK (email = lower(btrim(email)) AND length(email) <= 320 AND email LIKE '_%@_%'),
  invited_by uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  accepted_at timestamptz,
  accepted_actor_id uuid,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, invited_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, accepted_actor_id) REFERENCES actors (workspace_id, id),
  CONSTRAINT invitations_lifetime
    CHECK (expires_at > created_at AND expires_at <= created_at + interval '30 days'),
  CONSTRAINT invitations_acceptance_whole CHECK ((accepted_at IS NULL) = (accepted_actor_id IS NULL))
);
CREATE INDEX invitations_page ON invitations (workspace_id, created_at DESC, id DESC);
-- A sign-in finds the open invitations of one email, in every workspace.
CREATE INDEX invitations_open ON invitations (email) WHERE accepted_at IS NULL;

-- created_at is now(); accepted_at is now(), set once (authority.sql).
CREATE TRIGGER invitations_times BEFORE INSERT OR UPDATE ON invitations
  FOR EACH ROW EXECUTE FUNCTION public.mneia_recorded_times('created_at', 'accepted_at');

-- What a sign-in keeps between its steps, each value once: the provider's
-- state with its nonce and PKCE verifier (Authlib's cache), then a person's
-- pick of a workspace. Shared by every server process; the owner's alone,
-- reached by mneia_app only through mneia_sign_in_keep and _take, by key.
CREATE TABLE sign_in_states (
  key_digest text PRIMARY KEY,
  value text NOT NULL CHECK (length(value) <= 8000),
  expires_at timestamptz NOT NULL
);

-- Where each person has an actor: one row per identity and workspace, so that a
-- person's memberships are found without reading every workspace's actors (on
-- Citus a reference table, on every node: read where the request runs, never
-- across the nodes). Written by the functions that link a person to an actor
-- (mneia_bootstrap, mneia_sign_in_accept) and unlink one (mneia_erase_actor),
-- each with the person named; whatever reads it checks each actor's own row too,
-- so a link left behind (an administrator's hand) shows nothing.
CREATE TABLE identity_links (
  identity_id uuid NOT NULL REFERENCES identities (id),
  workspace_id uuid NOT NULL,
  actor_id uuid NOT NULL,
  PRIMARY KEY (identity_id, workspace_id)
);

-- Each open invitation by its email, so that a sign-in finds the person's
-- invitations without reading every workspace's (on Citus a reference table,
-- on every node). Written beside the invitation by mneia_invite, removed by
-- mneia_sign_in_accept once accepted, each with the email named; an expired
-- one stays, as its invitation does, and is never listed.
CREATE TABLE invitation_emails (
  workspace_id uuid NOT NULL,
  invitation_id uuid NOT NULL,
  email text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, invitation_id)
);
CREATE INDEX invitation_emails_email ON invitation_emails (email);

ALTER TABLE invitations ENABLE ROW LEVEL SECURITY;
ALTER TABLE invitations FORCE ROW LEVEL SECURITY;
ALTER TABLE invitation_emails ENABLE ROW LEVEL SECURITY;
ALTER TABLE invitation_emails FORCE ROW LEVEL SECURITY;
ALTER TABLE sign_in_states ENABLE ROW LEVEL SECURITY;
ALTER TABLE sign_in_states FORCE ROW LEVEL SECURITY;
ALTER TABLE identity_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE identity_links FORCE ROW LEVEL SECURITY;

-- The person a function below answers for, from the settings it set itself:
-- 'issuer', 'subject', 'email' or 'identity'. Read by the owner's policies only.
CREATE FUNCTION public.mneia_person(field text) RETURNS text
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN nullif(current_setting('mneia.person_' || field, true), ''); END $$;

CREATE FUNCTION public.mneia_name_person(issuer text, subject text, email text, identity uuid)
  RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    -- SET LOCAL, which Citus sends to every node the transaction reads (set_config is not sent):
    -- the owner's policies below read the person on the shards of every workspace. Each owner
    -- function that reads by them names its person here first, so whatever the caller set
    -- before is never what they read (docs/scale-out.md).
    EXECUTE 'SET LOCAL citus.propagate_set_commands = local';
    EXECUTE format('SET LOCAL mneia.person_issuer = %L', coalesce(issuer, ''));
    EXECUTE format('SET LOCAL mneia.person_subject = %L', coalesce(subject, ''));
    EXECUTE format('SET LOCAL mneia.person_email = %L', coalesce(email, ''));
    EXECUTE format('SET LOCAL mneia.person_identity = %L', coalesce(identity::text, ''));
    EXECUTE 'SET LOCAL mneia.person_workspaces = ''''';
    EXECUTE 'SET LOCAL mneia.person_identities = ''''';
  END
  $$;

-- Ids the owner's policies below show beside the person ('workspaces': where the person
-- has actors; 'identities': the people linked to the caller's actors), sent to every node
-- the same way.
CREATE FUNCTION public.mneia_name_ids(field text, ids uuid[]) RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    IF field NOT IN ('workspaces', 'identities') THEN
      RAISE EXCEPTION 'mneia_name_ids: no list %', field;
    END IF;
    EXECUTE format('SET LOCAL mneia.person_%s = %L', field, coalesce(ids, '{}')::text);
  END
  $$;

-- Invitations hold email addresses: a workspace's humans read and write its own.
CREATE POLICY invitation_read ON invitations FOR SELECT USING (
  workspace_id = (SELECT mneia_workspace()) AND (SELECT mneia_actor_is_human()));
CREATE POLICY invitation_create ON invitations FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND invited_by = (SELECT mneia_actor())
  AND (SELECT mneia_actor_is_human()) AND created_at = now()
  AND accepted_at IS NULL AND accepted_actor_id IS NULL);
-- At sign-in, as the owner: the invitations of the email the provider verified,
-- in every workspace, each accepted while bound to its own workspace.
CREATE POLICY invitation_signing_in ON invitations FOR SELECT TO mneia_owner
  USING (email = (SELECT mneia_person('email')));
CREATE POLICY invitation_accept ON invitations FOR UPDATE TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace()) AND email = (SELECT mneia_person('email')))
  WITH CHECK (workspace_id = (SELECT mneia_workspace()));
-- The person named, and their actors and workspaces, for the owner's functions below.
CREATE POLICY identity_person ON identities FOR SELECT TO mneia_owner
  USING (issuer = (SELECT mneia_person('issuer')) AND subject = (SELECT mneia_person('subject')));
CREATE POLICY identity_seen ON identities FOR SELECT TO mneia_owner
  USING (id = ANY (coalesce(nullif((SELECT mneia_person('identities')), ''), '{}')::uuid[]));
CREATE POLICY actor_person ON actors FOR SELECT TO mneia_owner
  USING (identity_id = (SELECT mneia_person('identity'))::uuid);
-- Read from the row alone (a policy on a Citus table may read no other table): the
-- workspaces mneia_memberships_of found the person's actors in, named beside the person.
CREATE POLICY workspace_person ON workspaces FOR SELECT TO mneia_owner USING (
  id = ANY (coalesce(nullif((SELECT mneia_person('workspaces')), ''), '{}')::uuid[]));
CREATE POLICY sign_in_state_owner ON sign_in_states TO mneia_owner USING (true) WITH CHECK (true);
-- The named email's open invitations, read, made and unmade by the owner's functions alone.
CREATE POLICY invitation_email_person ON invitation_emails TO mneia_owner
  USING (email = (SELECT mneia_person('email')))
  WITH CHECK (email = (SELECT mneia_person('email')));
-- The named person's links, read, made and unmade by the owner's functions alone.
CREATE POLICY identity_link_person ON identity_links TO mneia_owner
  USING (identity_id = (SELECT mneia_person('identity'))::uuid)
  WITH CHECK (identity_id = (SELECT mneia_person('identity'))::uuid);

-- A workspace's human invites an email (R19): the invitation, under its own policy
-- (invitation_create: the caller's workspace, invited by the caller, a human, now),
-- and its email beside it for sign-ins. The server's one way to invite.
CREATE FUNCTION public.mneia_invite(invited_email text, lifetime interval)
  RETURNS SETOF public.invitations
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    made public.invitations;
  BEGIN
    INSERT INTO public.invitations AS v (workspace_id, id, email, invited_by, expires_at)
      VALUES (public.mneia_workspace(), public.mneia_uuid7(), invited_email, public.mneia_actor(),
              now() + lifetime)
      RETURNING v.* INTO made;
    PERFORM public.mneia_name_person(NULL, NULL, made.email, NULL);
    INSERT INTO public.invitation_emails (workspace_id, invitation_id, email, created_at, expires_at)
      VALUES (made.workspace_id, made.id, made.email, made.created_at, made.expires_at);
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    RETURN NEXT made;
  END
  $$;

-- The person's actors: where their links say they have one, each actor read by its key
-- and kept when it is still the person's live HUMAN actor (a link left behind shows
-- nothing). No statement reads every workspace: on Citus the links are read on this node,
-- each actor on its own. The owner's functions' helper, never the server's: each caller has
-- named the person (mneia_name_person) before, as it must to read by them at all.
CREATE FUNCTION public.mneia_linked_actors(person uuid)
  RETURNS TABLE (workspace_id uuid, actor_id uuid, actor_name text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    linked record;
    held text;
  BEGIN
    FOR linked IN SELECT l.workspace_id, l.actor_id FROM public.identity_links l WHERE l.identity_id = person
    LOOP
      SELECT a.name INTO held FROM public.actors a
        WHERE a.workspace_id = linked.workspace_id AND a.id = linked.actor_id
          AND a.identity_id = person AND a.kind = 'HUMAN' AND a.erased_at IS NULL;
      IF FOUND THEN
        workspace_id := linked.workspace_id;
        actor_id := linked.actor_id;
        actor_name := held;
        RETURN NEXT;
      END IF;
    END LOOP;
  END
  $$;

-- One person's memberships: each workspace where the identity has a HUMAN
-- actor, with that actor. The owner's own; the two callers below decide whose.
CREATE FUNCTION public.mneia_memberships_of(person uuid)
  RETURNS TABLE (workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    held record;
    place text;
    places uuid[] := '{}';
    place_names text[] := '{}';
    actor_ids uuid[] := '{}';
    actor_names text[] := '{}';
  BEGIN
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    -- The person's actors, then each workspace by its id, into arrays of plain values.
    FOR held IN SELECT h.workspace_id, h.actor_id, h.actor_name FROM public.mneia_linked_actors(person) h
    LOOP
      places := places || held.workspace_id;
      actor_ids := actor_ids || held.actor_id;
      actor_names := actor_names || held.actor_name;
    END LOOP;
    PERFORM public.mneia_name_ids('workspaces', places);
    FOR i IN 1 .. coalesce(array_length(places, 1), 0) LOOP
      SELECT w.name INTO place FROM public.workspaces w WHERE w.id = places[i];
      place_names := place_names || place;
    END LOOP;
    RETURN QUERY SELECT h.place, h.place_name, h.held, h.held_name
      FROM unnest(places, place_names, actor_ids, actor_names) AS h (place, place_name, held, held_name)
      WHERE h.place_name IS NOT NULL
      ORDER BY h.place_name, h.place;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $$;

-- The people linked to these actors of the caller's workspace (an OpenID
-- sign-in's identities only), as Actor.identity shows them: the actors read
-- under the caller's binding, then their identities by id.
CREATE FUNCTION public.mneia_identities_of(actor_ids uuid[])
  RETURNS TABLE (workspace_id uuid, actor_id uuid, identity_id uuid, display_name text, issuer text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    here uuid := public.mneia_workspace();
    linked_actors uuid[];
    linked uuid[];
  BEGIN
    IF here IS NULL THEN
      RETURN;
    END IF;
    SELECT coalesce(array_agg(a.id), '{}'), coalesce(array_agg(a.identity_id), '{}')
      INTO linked_actors, linked
      FROM public.actors a
      WHERE a.workspace_id = here AND a.id = ANY (actor_ids) AND a.identity_id IS NOT NULL;
    PERFORM public.mneia_name_ids('identities', linked);
    RETURN QUERY SELECT here, x.actor_id, i.id, i.display_name, i.issuer
      FROM unnest(linked_actors, linked) AS x (actor_id, identity_id)
      JOIN public.identities i ON i.id = x.identity_id
      WHERE i.issuer IS NOT NULL;
    PERFORM public.mneia_name_ids('identities', NULL);
  END
  $$;

-- The caller's memberships (Query.myMemberships): for a human linked to an
-- identity, its person's; for anyone else, only the caller's own actor.
CREATE FUNCTION public.mneia_my_memberships()
  RETURNS TABLE (workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    here uuid := public.mneia_workspace();
    me uuid := public.mneia_actor();
    person uuid;
  BEGIN
    SELECT a.identity_id INTO person FROM public.actors a
      WHERE a.workspace_id = here AND a.id = me AND a.kind = 'HUMAN';
    IF person IS NULL THEN
      RETURN QUERY SELECT a.workspace_id, w.name, a.id, a.name
        FROM public.actors a JOIN public.workspaces w ON w.id = a.workspace_id
        WHERE a.workspace_id = here AND a.id = me;
      RETURN;
    END IF;
    RETURN QUERY SELECT m.workspace_id, m.workspace_name, m.actor_id, m.actor_name
      FROM public.mneia_memberships_of(person) m;
  END
  $$;

-- The person an ID token names (issuer and subject), or NULL: the transaction
-- unbound, then the person named, with their identity once found, for the
-- owner's policies below. Every step of a sign-in begins here.
CREATE FUNCTION public.mneia_signing_person(signing_issuer text, signing_subject text, email text)
  RETURNS uuid
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    person uuid;
  BEGIN
    PERFORM public.mneia_unbind();
    PERFORM public.mneia_name_person(signing_issuer, signing_subject, email, NULL);
    SELECT i.id INTO person FROM public.identities i
      WHERE i.issuer = signing_issuer AND i.subject = signing_subject;
    PERFORM public.mneia_name_person(signing_issuer, signing_subject, email, person);
    RETURN person;
  END
  $$;

-- Sign-in's first step, once the server validated the provider's ID token: the
-- open invitations of the email the provider verified (NULL: none), the newest of
-- each workspace where the person has no actor yet, from the invitations' emails
-- and the person's links (on Citus both on this node); each is accepted, its
-- invitation read again by its key, by mneia_sign_in_accept.
CREATE FUNCTION public.mneia_sign_in_invitations(signing_issuer text, signing_subject text,
    verified_email text)
  RETURNS TABLE (workspace_id uuid, invitation_id uuid)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    wanted text := lower(btrim(verified_email));
    person uuid;
    member_of uuid[] := '{}';
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, wanted);
    IF person IS NOT NULL THEN
      SELECT coalesce(array_agg(h.workspace_id), '{}') INTO member_of FROM public.mneia_linked_actors(person) h;
    END IF;
    RETURN QUERY SELECT DISTINCT ON (e.workspace_id) e.workspace_id, e.invitation_id
      FROM public.invitation_emails e
      WHERE e.email = wanted AND e.expires_at > now() AND e.workspace_id <> ALL (member_of)
      ORDER BY e.workspace_id, e.created_at DESC, e.invitation_id DESC;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $$;

-- One invitation accepted, bound to its workspace (on Citus, on its node): the
-- identity created if the person is new, a HUMAN actor (named given_name,
-- created by the inviter) linked to it, the invitation marked accepted. Nothing
-- when the invitation is not open for this email, or the person has an actor
-- there already (another sign-in accepted it meanwhile). Returns the actor.
CREATE FUNCTION public.mneia_sign_in_accept(signing_issuer text, signing_subject text, verified_email text,
    given_name text, workspace uuid, invitation uuid)
  RETURNS uuid
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    wanted text := lower(btrim(verified_email));
    person uuid;
    invited record;
    joined uuid := public.mneia_uuid7();
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, wanted);
    SELECT v.invited_by INTO invited FROM public.invitations v
      WHERE v.workspace_id = workspace AND v.id = invitation AND v.email = wanted
        AND v.accepted_at IS NULL AND v.expires_at > now();
    IF NOT FOUND OR (person IS NOT NULL AND EXISTS (
         SELECT 1 FROM public.actors a WHERE a.workspace_id = workspace AND a.identity_id = person)) THEN
      PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
      RETURN NULL;
    END IF;
    IF person IS NULL THEN
      person := public.mneia_uuid7();
      INSERT INTO public.identities (id, display_name, issuer, subject)
        VALUES (person, given_name, signing_issuer, signing_subject);
      PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, person);
    END IF;
    PERFORM public.mneia_bind(workspace, joined);
    INSERT INTO public.actors (workspace_id, id, kind, name, identity_id, created_by)
      VALUES (workspace, joined, 'HUMAN', given_name, person, invited.invited_by);
    -- A link left behind (by hand: erasure removes its own) gives way to the new actor's.
    INSERT INTO public.identity_links (identity_id, workspace_id, actor_id) VALUES (person, workspace, joined)
      ON CONFLICT (identity_id, workspace_id) DO UPDATE SET actor_id = excluded.actor_id;
    UPDATE public.invitations v SET accepted_at = now(), accepted_actor_id = joined
      WHERE v.workspace_id = workspace AND v.id = invitation AND v.accepted_at IS NULL;
    DELETE FROM public.invitation_emails e WHERE e.workspace_id = workspace AND e.invitation_id = invitation;
    PERFORM public.mneia_unbind();
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    RETURN joined;
  END
  $$;

-- Sign-in on one server, in one call: the open invitations accepted
-- (mneia_sign_in_invitations, mneia_sign_in_accept), then the person's
-- memberships, as mneia_memberships_of. On Citus the server runs the same
-- steps itself, each acceptance on its workspace's node. No row: nobody the
-- database knows, and nothing to accept.
CREATE FUNCTION public.mneia_sign_in(signing_issuer text, signing_subject text, verified_email text,
    given_name text)
  RETURNS TABLE (workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    invited record;
  BEGIN
    FOR invited IN
      SELECT o.workspace_id, o.invitation_id
        FROM public.mneia_sign_in_invitations(signing_issuer, signing_subject, verified_email) o
    LOOP
      PERFORM public.mneia_sign_in_accept(signing_issuer, signing_subject, verified_email, given_name,
                                          invited.workspace_id, invited.invitation_id);
    END LOOP;
    RETURN QUERY SELECT m.workspace_id, m.workspace_name, m.actor_id, m.actor_name
      FROM public.mneia_sign_in_memberships(signing_issuer, signing_subject) m;
  END
  $$;

-- The memberships of the person an ID token names, as mneia_memberships_of; none
-- when the database does not know them.
CREATE FUNCTION public.mneia_sign_in_memberships(signing_issuer text, signing_subject text)
  RETURNS TABLE (workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    person uuid;
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, NULL);
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    IF person IS NOT NULL THEN
      RETURN QUERY SELECT m.workspace_id, m.workspace_name, m.actor_id, m.actor_name
        FROM public.mneia_memberships_of(person) m;
    END IF;
  END
  $$;

-- Sign-in's last step: a session token (by its digest) for the person's HUMAN
-- actor of one workspace, created by that actor, expiring after `lifetime`
-- and never more than 12 hours from now. Returns the token's id; NULL when
-- the person has no human actor there.
CREATE FUNCTION public.mneia_sign_in_session(signing_issuer text, signing_subject text, workspace uuid,
    token_digest text, token_hint text, lifetime interval)
  RETURNS uuid
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    person uuid;
    member uuid;
    made uuid := public.mneia_uuid7();
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, NULL);
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    SELECT a.id INTO member FROM public.actors a
      WHERE a.identity_id = person AND a.workspace_id = workspace AND a.kind = 'HUMAN';
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    IF member IS NULL THEN
      RETURN NULL;
    END IF;
    PERFORM public.mneia_bind(workspace, member);
    INSERT INTO public.api_tokens (workspace_id, id, actor_id, token_hash, hint, created_by, expires_at)
      VALUES (workspace, made, member, token_digest, token_hint, member,
              now() + least(lifetime, interval '12 hours'));
    PERFORM public.mneia_unbind();
    RETURN made;
  END
  $$;

-- Keep a value of a sign-in under a key (a random state), for at most ten minutes.
CREATE FUNCTION public.mneia_sign_in_keep(kept_key text, kept_value text, seconds integer) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    DELETE FROM public.sign_in_states s WHERE s.expires_at <= now();
    INSERT INTO public.sign_in_states (key_digest, value, expires_at)
      VALUES (encode(sha256(convert_to(kept_key, 'UTF8')), 'hex'), kept_value,
              now() + make_interval(secs => least(greatest(seconds, 1), 600)))
      ON CONFLICT (key_digest) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at;
  END
  $$;

-- Take a kept value, once: whoever asks again, or after it expired, gets NULL.
CREATE FUNCTION public.mneia_sign_in_take(kept_key text) RETURNS text
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    taken text;
    until timestamptz;
  BEGIN
    DELETE FROM public.sign_in_states s
      WHERE s.key_digest = encode(sha256(convert_to(kept_key, 'UTF8')), 'hex')
      RETURNING s.value, s.expires_at INTO taken, until;
    RETURN CASE WHEN until > now() THEN taken END;
  END
  $$;
