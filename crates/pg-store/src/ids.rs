//! The types of the ids that cross crate boundaries, so that a user id is never passed where a
//! session id is meant. Each is the text the column holds; diesel reads and binds it as such.

service_kit::id_type!(
    /// The id of a user (`auth.user.id`), the key of everything a person owns.
    UserId
);
service_kit::id_type!(
    /// The id of a session row (`auth.session.id`); never its token.
    SessionId
);
