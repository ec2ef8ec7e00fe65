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

ALTER TABLE invitations ENABLE ROW LEVEL SECURITY;
ALTER TABLE invitations FORCE ROW LEVEL SECURITY;
ALTER TABLE sign_in_states ENABLE ROW LEVEL SECURITY;
ALTER TABLE sign_in_states FORCE ROW LEVEL SECURITY;

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
    PERFORM set_config('mneia.person_issuer', coalesce(issuer, ''), true),
            set_config('mneia.person_subject', coalesce(subject, ''), true),
            set_config('mneia.person_email', coalesce(email, ''), true),
            set_config('mneia.person_identity', coalesce(identity::text, ''), true);
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
CREATE POLICY actor_person ON actors FOR SELECT TO mneia_owner
  USING (identity_id = (SELECT mneia_person('identity'))::uuid);
CREATE POLICY workspace_person ON workspaces FOR SELECT TO mneia_owner USING (
  EXISTS (SELECT 1 FROM actors a WHERE a.workspace_id = workspaces.id
            AND a.identity_id = (SELECT mneia_person('identity'))::uuid));
CREATE POLICY sign_in_state_owner ON sign_in_states TO mneia_owner USING (true) WITH CHECK (true);

-- One person's memberships: each workspace where the identity has a HUMAN
-- actor, with that actor. The owner's own; the two callers below decide whose.
CREATE FUNCTION public.mneia_memberships_of(person uuid)
  RETURNS TABLE (workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    RETURN QUERY SELECT a.workspace_id, w.name, a.id, a.name
      FROM public.actors a JOIN public.workspaces w ON w.id = a.workspace_id
      WHERE a.identity_id = person AND a.kind = 'HUMAN' AND a.erased_at IS NULL
      ORDER BY w.name, a.workspace_id;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
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

-- Sign-in, once the server validated the provider's ID token: first the open
-- invitations of the email the provider verified (NULL: none) are accepted,
-- the newest of each workspace where the person has no actor yet, creating
-- the identity if it is new and a HUMAN actor (named given_name, created by
-- the inviter); then the person's memberships, as mneia_memberships_of.
-- No row: nobody the database knows, and nothing to accept.
CREATE FUNCTION public.mneia_sign_in(signing_issuer text, signing_subject text, verified_email text,
    given_name text)
  RETURNS TABLE (workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    wanted text := lower(btrim(verified_email));
    person uuid;
    invited record;
    joined uuid;
  BEGIN
    PERFORM public.mneia_unbind();
    PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, NULL);
    SELECT i.id INTO person FROM public.identities i
      WHERE i.issuer = signing_issuer AND i.subject = signing_subject;
    PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, person);
    FOR invited IN
      SELECT DISTINCT ON (v.workspace_id) v.workspace_id, v.id, v.invited_by
        FROM public.invitations v
        WHERE v.email = wanted AND v.accepted_at IS NULL AND v.expires_at > now()
          AND NOT EXISTS (SELECT 1 FROM public.actors a
                            WHERE a.workspace_id = v.workspace_id AND a.identity_id = person)
        ORDER BY v.workspace_id, v.created_at DESC, v.id DESC
    LOOP
      IF person IS NULL THEN
        person := public.mneia_uuid7();
        INSERT INTO public.identities (id, display_name, issuer, subject)
          VALUES (person, given_name, signing_issuer, signing_subject);
        PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, person);
      END IF;
      joined := public.mneia_uuid7();
      PERFORM public.mneia_bind(invited.workspace_id, joined);
      INSERT INTO public.actors (workspace_id, id, kind, name, identity_id, created_by)
        VALUES (invited.workspace_id, joined, 'HUMAN', given_name, person, invited.invited_by);
      UPDATE public.invitations v SET accepted_at = now(), accepted_actor_id = joined
        WHERE v.workspace_id = invited.workspace_id AND v.id = invited.id AND v.accepted_at IS NULL;
      PERFORM public.mneia_unbind();
    END LOOP;
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
    PERFORM public.mneia_unbind();
    PERFORM public.mneia_name_person(signing_issuer, signing_subject, NULL, NULL);
    SELECT i.id INTO person FROM public.identities i
      WHERE i.issuer = signing_issuer AND i.subject = signing_subject;
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
