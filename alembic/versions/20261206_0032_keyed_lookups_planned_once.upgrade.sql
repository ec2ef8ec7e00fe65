-- 0032 upgrade: authentication and an assertion's triggers planned once per connection (see the .py
-- beside). The result equals storage/sql (tests/test_declared.py).
SET LOCAL ROLE mneia_owner;
ALTER FUNCTION public.mneia_authenticate(text, uuid) SET plan_cache_mode = auto;
ALTER FUNCTION public.mneia_bind(uuid, uuid) SET plan_cache_mode = auto;
ALTER FUNCTION public.mneia_items_count() SET plan_cache_mode = auto;
ALTER FUNCTION public.mneia_items_asserted_log() SET plan_cache_mode = auto;
RESET ROLE;
