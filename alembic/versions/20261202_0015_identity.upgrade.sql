SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
ALTER TABLE identities ADD COLUMN issuer text;
ALTER TABLE identities ADD COLUMN subject text;
ALTER TABLE actors DROP CONSTRAINT actors_check;
ALTER TABLE actors ADD CONSTRAINT actors_identity_human CHECK (((identity_id IS NULL) OR (kind = 'HUMAN'::text)));
ALTER TABLE identities ADD CONSTRAINT identities_issuer_check CHECK (((length(issuer) >= 1) AND (length(issuer) <= 500)));
ALTER TABLE identities ADD CONSTRAINT identities_oidc UNIQUE (issuer, subject);
ALTER TABLE identities ADD CONSTRAINT identities_oidc_whole CHECK (((issuer IS NULL) = (subject IS NULL)));
ALTER TABLE identities ADD CONSTRAINT identities_subject_check CHECK (((length(subject) >= 1) AND (length(subject) <= 500)));
CREATE UNIQUE INDEX actors_identity ON public.actors USING btree (identity_id, workspace_id);
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
CREATE INDEX invitations_open ON invitations (email) WHERE accepted_at IS NULL;
CREATE TABLE sign_in_states (
  key_digest text PRIMARY KEY,
  value text NOT NULL CHECK (length(value) <= 8000),
  expires_at timestamptz NOT NULL
);
ALTER TABLE invitations ENABLE ROW LEVEL SECURITY;
ALTER TABLE invitations FORCE ROW LEVEL SECURITY;
ALTER TABLE sign_in_states ENABLE ROW LEVEL SECURITY;
ALTER TABLE sign_in_states FORCE ROW LEVEL SECURITY;
CREATE OR REPLACE FUNCTION public.mneia_memberships_of(person uuid)
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    RETURN QUERY SELECT a.workspace_id, w.name, a.id, a.name
      FROM public.actors a JOIN public.workspaces w ON w.id = a.workspace_id
      WHERE a.identity_id = person AND a.kind = 'HUMAN'
      ORDER BY w.name, a.workspace_id;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_my_memberships()
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_name_person(issuer text, subject text, email text, identity uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    PERFORM set_config('mneia.person_issuer', coalesce(issuer, ''), true),
            set_config('mneia.person_subject', coalesce(subject, ''), true),
            set_config('mneia.person_email', coalesce(email, ''), true),
            set_config('mneia.person_identity', coalesce(identity::text, ''), true);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_person(field text)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$ BEGIN RETURN nullif(current_setting('mneia.person_' || field, true), ''); END $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in(signing_issuer text, signing_subject text, verified_email text, given_name text)
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_keep(kept_key text, kept_value text, seconds integer)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    DELETE FROM public.sign_in_states s WHERE s.expires_at <= now();
    INSERT INTO public.sign_in_states (key_digest, value, expires_at)
      VALUES (encode(sha256(convert_to(kept_key, 'UTF8')), 'hex'), kept_value,
              now() + make_interval(secs => least(greatest(seconds, 1), 600)))
      ON CONFLICT (key_digest) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_session(signing_issuer text, signing_subject text, workspace uuid, token_digest text, token_hint text, lifetime interval)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_take(kept_key text)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    taken text;
    until timestamptz;
  BEGIN
    DELETE FROM public.sign_in_states s
      WHERE s.key_digest = encode(sha256(convert_to(kept_key, 'UTF8')), 'hex')
      RETURNING s.value, s.expires_at INTO taken, until;
    RETURN CASE WHEN until > now() THEN taken END;
  END
  $function$;
CREATE POLICY actor_person ON actors AS PERMISSIVE FOR SELECT TO mneia_owner USING ((identity_id = (( SELECT mneia_person('identity'::text) AS mneia_person))::uuid));
CREATE POLICY identity_person ON identities AS PERMISSIVE FOR SELECT TO mneia_owner USING (((issuer = ( SELECT mneia_person('issuer'::text) AS mneia_person)) AND (subject = ( SELECT mneia_person('subject'::text) AS mneia_person))));
CREATE POLICY invitation_accept ON invitations AS PERMISSIVE FOR UPDATE TO mneia_owner USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (email = ( SELECT mneia_person('email'::text) AS mneia_person)))) WITH CHECK ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY invitation_create ON invitations AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (invited_by = ( SELECT mneia_actor() AS mneia_actor)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND (created_at = now()) AND (accepted_at IS NULL) AND (accepted_actor_id IS NULL)));
CREATE POLICY invitation_read ON invitations AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human)));
CREATE POLICY invitation_signing_in ON invitations AS PERMISSIVE FOR SELECT TO mneia_owner USING ((email = ( SELECT mneia_person('email'::text) AS mneia_person)));
CREATE POLICY sign_in_state_owner ON sign_in_states AS PERMISSIVE FOR ALL TO mneia_owner USING (true) WITH CHECK (true);
CREATE POLICY workspace_person ON workspaces AS PERMISSIVE FOR SELECT TO mneia_owner USING ((EXISTS ( SELECT 1
   FROM actors a
  WHERE ((a.workspace_id = workspaces.id) AND (a.identity_id = (( SELECT mneia_person('identity'::text) AS mneia_person))::uuid)))));
CREATE TRIGGER invitations_times BEFORE INSERT OR UPDATE ON public.invitations FOR EACH ROW EXECUTE FUNCTION mneia_recorded_times('created_at', 'accepted_at');
REVOKE ALL ON FUNCTION mneia_memberships_of(person uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_my_memberships() FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_name_person(issuer text, subject text, email text, identity uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_person(field text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_sign_in(signing_issuer text, signing_subject text, verified_email text, given_name text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_sign_in_keep(kept_key text, kept_value text, seconds integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_sign_in_session(signing_issuer text, signing_subject text, workspace uuid, token_digest text, token_hint text, lifetime interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_sign_in_take(kept_key text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_my_memberships() TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_sign_in(signing_issuer text, signing_subject text, verified_email text, given_name text) TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_sign_in_keep(kept_key text, kept_value text, seconds integer) TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_sign_in_session(signing_issuer text, signing_subject text, workspace uuid, token_digest text, token_hint text, lifetime interval) TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_sign_in_take(kept_key text) TO mneia_app;
GRANT INSERT ON invitations TO mneia_app;
GRANT SELECT ON invitations TO mneia_app;
RESET ROLE;
