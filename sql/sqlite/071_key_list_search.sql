-- sql/071_key_list_search.sql for the embedded store: SQLite compares text bytewise and sorts nulls
-- first already, so plain indexes serve the same ranges and orders.
CREATE INDEX api_keys_name_lower ON api_keys (lower(name));
CREATE INDEX api_keys_last_used_at_id ON api_keys (last_used_at, id);
