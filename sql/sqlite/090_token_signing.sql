-- sql/090 for the embedded store: a rolled key's previous secret, sealed, for the tokens it signed.
ALTER TABLE api_keys ADD COLUMN previous_secret_ciphertext blob;
