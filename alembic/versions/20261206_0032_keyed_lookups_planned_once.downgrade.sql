-- 0032 downgrade: the four functions follow the transaction's plan_cache_mode again, as at 0031.
SET LOCAL ROLE mneia_owner;
ALTER FUNCTION public.mneia_authenticate(text, uuid) RESET plan_cache_mode;
ALTER FUNCTION public.mneia_bind(uuid, uuid) RESET plan_cache_mode;
ALTER FUNCTION public.mneia_items_count() RESET plan_cache_mode;
ALTER FUNCTION public.mneia_items_asserted_log() RESET plan_cache_mode;
RESET ROLE;
