ALTER TABLE licence
    DROP INDEX licence_sparkle_feed,
    DROP CONSTRAINT licence_channel_known,
    DROP COLUMN sparkle_feed,
    DROP COLUMN channel;
