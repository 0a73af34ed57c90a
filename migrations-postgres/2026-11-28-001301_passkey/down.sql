DROP TABLE auth.passkey;
