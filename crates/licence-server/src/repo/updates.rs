//! The update columns of `licence`: its channel and the hash of its Sparkle feed token.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::licences::{LicenceAccess, LicenceRow};
use super::{Conn, Db, DbError, LicenceId};
use crate::releases::Channel;
use crate::schema::licence;

/// The channel of a licence (`None`: no such licence).
pub async fn channel(db: &Db, id: &LicenceId) -> Result<Option<Channel>, DbError> {
    db.run(async |conn| {
        licence::table
            .find(id)
            .select(licence::channel)
            .first::<String>(conn)
            .await
            .optional()
    })
    .await
    .map(|c| c.as_deref().map(Channel::from_column))
}

/// Moves the licence with `key` to `channel`; false when no licence has the key.
pub async fn set_channel(db: &Db, key: &str, channel: Channel) -> Result<bool, DbError> {
    let now = chrono::Utc::now().naive_utc();
    db.transaction(async |conn| {
        let found = super::licences::find_by_key_for_update(conn, key).await?;
        let Some(found) = found else {
            return Ok(false);
        };
        diesel::update(licence::table.find(&found.id))
            .set((
                licence::channel.eq(channel.as_str()),
                licence::updated_at.eq(now),
            ))
            .execute(conn)
            .await?;
        Ok(true)
    })
    .await
}

/// The hex SHA-256 a feed token is found by.
pub fn feed_hash(token: &str) -> String {
    use sha2::Digest;
    crate::signing::to_hex(&sha2::Sha256::digest(token.as_bytes()))
}

/// Records the feed token of a licence whose feed address is being handed out, so that the
/// feed route can find the licence; a no-op when it is recorded already.
pub async fn remember_feed_on(conn: &mut Conn, id: &LicenceId, token: &str) -> QueryResult<()> {
    let hash = feed_hash(token);
    diesel::update(
        licence::table.find(id).filter(
            licence::sparkle_feed
                .is_null()
                .or(licence::sparkle_feed.ne(&hash)),
        ),
    )
    .set(licence::sparkle_feed.eq(&hash))
    .execute(conn)
    .await?;
    Ok(())
}

/// [`remember_feed_on`] for the licence e-mail, which shows the feed address made with `secret`
/// (`DOWNLOAD_SIGNING_SECRET`).
pub async fn remember_mailed_feed(
    conn: &mut Conn,
    id: &LicenceId,
    secret: &[u8],
) -> QueryResult<()> {
    let token = crate::signing::sparkle_feed_token(secret, id.as_str());
    remember_feed_on(conn, id, &token).await
}

/// [`remember_feed_on`] on a connection of its own.
pub async fn remember_feed(db: &Db, id: &LicenceId, token: &str) -> Result<(), DbError> {
    db.run(async |conn| remember_feed_on(conn, id, token).await)
        .await
}

/// The licence whose recorded feed token is `token`, with its channel. The caller still checks
/// the token against the licence id: the hash only finds the row.
pub async fn by_feed(db: &Db, token: &str) -> Result<Option<(LicenceAccess, Channel)>, DbError> {
    let hash = feed_hash(token);
    let row = db
        .run(async |conn| {
            licence::table
                .filter(licence::sparkle_feed.eq(&hash))
                .select((LicenceRow::as_select(), licence::channel))
                .first::<(LicenceRow, String)>(conn)
                .await
                .optional()
        })
        .await?;
    Ok(row.map(|(l, c)| (l.access(), Channel::from_column(&c))))
}
