-- 0038 upgrade: each open invitation's email beside it, so that a sign-in finds a person's
-- invitations without reading every workspace's (see the .py beside). The result equals
-- storage/sql (tests/test_declared.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
CREATE TABLE invitation_emails (
  workspace_id uuid NOT NULL,
  invitation_id uuid NOT NULL,
  email text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, invitation_id)
);
CREATE INDEX invitation_emails_email ON invitation_emails (email);
-- Every open invitation now, as mneia_invite will keep them: read past the invitations' policies
-- by their owner (FORCE lifted for this statement, in this transaction alone), before the
-- emails' own are on.
ALTER TABLE invitations NO FORCE ROW LEVEL SECURITY;
INSERT INTO invitation_emails (workspace_id, invitation_id, email, created_at, expires_at)
  SELECT v.workspace_id, v.id, v.email, v.created_at, v.expires_at FROM invitations v
  WHERE v.accepted_at IS NULL;
ALTER TABLE invitations FORCE ROW LEVEL SECURITY;
ALTER TABLE invitation_emails ENABLE ROW LEVEL SECURITY;
ALTER TABLE invitation_emails FORCE ROW LEVEL SECURITY;
CREATE OR REPLACE FUNCTION public.mneia_invite(invited_email text, lifetime interval)
 RETURNS SETOF invitations
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_accept(signing_issuer text, signing_subject text, verified_email text, given_name text, workspace uuid, invitation uuid)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_invitations(signing_issuer text, signing_subject text, verified_email text)
 RETURNS TABLE(workspace_id uuid, invitation_id uuid)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    wanted text := lower(btrim(verified_email));
    person uuid;
    member_of uuid[] := '{}';
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, wanted);
    IF person IS NOT NULL THEN
      SELECT coalesce(array_agg(h.workspace_id), '{}') INTO member_of FROM public.mneia_linked_actors(person) h;
      PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, person);
    END IF;
    RETURN QUERY SELECT DISTINCT ON (e.workspace_id) e.workspace_id, e.invitation_id
      FROM public.invitation_emails e
      WHERE e.email = wanted AND e.expires_at > now() AND e.workspace_id <> ALL (member_of)
      ORDER BY e.workspace_id, e.created_at DESC, e.invitation_id DESC;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
CREATE POLICY invitation_email_person ON invitation_emails AS PERMISSIVE FOR ALL TO mneia_owner USING ((email = ( SELECT mneia_person('email'::text) AS mneia_person))) WITH CHECK ((email = ( SELECT mneia_person('email'::text) AS mneia_person)));
REVOKE INSERT ON invitations FROM mneia_app;
REVOKE ALL ON FUNCTION mneia_invite(invited_email text, lifetime interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_invite(invited_email text, lifetime interval) TO mneia_app;
RESET ROLE;
