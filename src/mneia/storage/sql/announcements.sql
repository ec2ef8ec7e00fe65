-- Announcements across server processes (R15): LISTEN/NOTIFY.
--
-- NOTIFY ignores row-level security, and any session may LISTEN on any
-- channel it can name. So each workspace has a channel of its own, named by
-- a keyed hash of its id that only a bound transaction can learn
-- (mneia_channel), and a notification carries a sequence number only: a
-- subscriber re-reads the row with that number under its own context before
-- it shows anything. A session without a token learns nothing, not even how
-- busy another tenant is.

-- The channel of a workspace. Owner only: with it, anyone who knows a
-- workspace's id could listen to it.
CREATE FUNCTION public.mneia_channel_of(workspace uuid) RETURNS text
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RETURN (SELECT 'mneia_' || left(encode(sha256(k.channel_salt || convert_to(workspace::text, 'UTF8')), 'hex'), 32)
            FROM public.seal_keys k WHERE k.id = 1);
  END
  $$;

-- The channel of the caller's own workspace; NULL when the transaction is bound to nobody.
CREATE FUNCTION public.mneia_channel() RETURNS text
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN public.mneia_channel_of(public.mneia_workspace()); END $$;

CREATE FUNCTION public.mneia_announce() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    PERFORM pg_notify(public.mneia_channel_of(NEW.workspace_id),
                      json_build_object('kind', TG_ARGV[0], 'seq', NEW.seq)::text);
    RETURN NULL;
  END
  $$;

CREATE TRIGGER disputes_announce AFTER INSERT ON disputes
  FOR EACH ROW EXECUTE FUNCTION public.mneia_announce('dispute');
CREATE TRIGGER proposals_announce AFTER INSERT ON proposals
  FOR EACH ROW EXECUTE FUNCTION public.mneia_announce('proposal');

-- A revoked token (F16): the subscribers presenting it authenticate again at
-- once, instead of at their next event. The payload names the token by its
-- id (never its digest), which only the workspace's bound transactions can
-- hear, and a fresh number.
CREATE FUNCTION public.mneia_announce_revocation() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    PERFORM pg_notify(public.mneia_channel_of(NEW.workspace_id),
                      json_build_object('kind', 'token', 'seq', nextval('public.announcement_seq'),
                                        'subject', NEW.id)::text);
    RETURN NULL;
  END
  $$;

CREATE TRIGGER api_tokens_announce AFTER UPDATE OF revoked_at ON api_tokens
  FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL)
  EXECUTE FUNCTION public.mneia_announce_revocation();
