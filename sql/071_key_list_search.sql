-- The key list's search and sorts (docs/decisions/0055-key-list-search-and-sort.md): a case-insensitive
-- name prefix is a range of lower(name) (text_pattern_ops: LIKE 'abc%' uses it whatever the collation),
-- and "by last use" walks last_used_at with never-used keys before the oldest use, either way round.
CREATE INDEX api_keys_name_lower ON api_keys (lower(name) text_pattern_ops);
CREATE INDEX api_keys_last_used_at_id ON api_keys (last_used_at NULLS FIRST, id);
