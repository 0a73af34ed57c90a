-- The update channel of a licence (contract section 12): `stable` unless an operator moves it
-- to `beta` (`licence-server admin channel`).
--
-- `sparkle_feed` is the hex SHA-256 of the licence's Sparkle feed token. The token is an HMAC of
-- the licence id with DOWNLOAD_SIGNING_SECRET, which the database never sees, so the server
-- writes this column whenever it hands the feed address out (the licence e-mail, the list of
-- activations); the feed route finds its licence through the unique index and then checks the
-- token against the id in constant time. A hash, not the token, so that a copy of the table
-- does not open anyone's feed.
ALTER TABLE licence
    ADD COLUMN channel VARCHAR(16) NOT NULL DEFAULT 'stable',
    ADD COLUMN sparkle_feed CHAR(64) NULL,
    ADD CONSTRAINT licence_channel_known CHECK (channel IN ('stable', 'beta')),
    ADD UNIQUE INDEX licence_sparkle_feed (sparkle_feed);
