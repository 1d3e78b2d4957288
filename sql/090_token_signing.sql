-- Short-lived tokens (docs/guides/browser.md, docs/decisions/0091-short-lived-tokens.md): a token is
-- signed with a key derived from a key's secret, and one minted with a rolled key's previous secret
-- works until that secret's grace ends, so the previous secret is kept sealed beside its hash.
ALTER TABLE api_keys ADD COLUMN previous_secret_ciphertext bytea;
