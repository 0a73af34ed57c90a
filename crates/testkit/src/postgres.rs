//! A fresh Postgres database per test.

use diesel::{Connection, PgConnection, RunQueryDsl};

use crate::{is_stale, unique_db_name, with_database};

/// Admin connection used to create and drop test databases.
pub fn admin_url() -> String {
    std::env::var("TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://app:app@127.0.0.1:5432/postgres".to_owned())
}

/// An empty database that exists until this value is dropped.
pub struct TestPostgres {
    name: String,
    url: String,
}

#[derive(diesel::QueryableByName)]
struct Name {
    #[diesel(sql_type = diesel::sql_types::Text)]
    datname: String,
}

impl TestPostgres {
    /// Creates an empty database (no migrations applied).
    pub fn empty() -> Self {
        crate::process_init();
        let admin = admin_url();
        let mut conn = PgConnection::establish(&admin)
            .unwrap_or_else(|e| panic!("cannot reach Postgres at TEST_POSTGRES_URL: {e}"));
        drop_stale(&mut conn);
        let name = unique_db_name();
        diesel::sql_query(format!("CREATE DATABASE \"{name}\""))
            .execute(&mut conn)
            .expect("create test database");
        let url = with_database(&admin, &name);
        Self { name, url }
    }

    /// Creates a database and applies `migrate` to it, as a service would at start-up.
    pub fn migrated(
        migrate: impl FnOnce(&mut PgConnection) -> anyhow::Result<Vec<String>>,
    ) -> Self {
        let db = Self::empty();
        let mut conn = db.connect();
        migrate(&mut conn).expect("migrate test database");
        db
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn connect(&self) -> PgConnection {
        PgConnection::establish(&self.url).expect("connect to test database")
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        if let Ok(mut conn) = PgConnection::establish(&admin_url()) {
            let _ = diesel::sql_query(format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ))
            .execute(&mut conn);
        }
    }
}

fn drop_stale(conn: &mut PgConnection) {
    let names: Vec<Name> =
        diesel::sql_query("SELECT datname FROM pg_database WHERE datname LIKE 't\\_%'")
            .load(conn)
            .unwrap_or_default();
    for n in names.into_iter().filter(|n| is_stale(&n.datname)) {
        let _ = diesel::sql_query(format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            n.datname
        ))
        .execute(conn);
    }
}

/// `url` connecting as the service role `role` (migration `service_roles`): the server switches
/// to it at connection start, so a test's service has exactly the rights it has when deployed
/// (where it logs in as that role), while the test itself stays the owner.
pub fn as_role(url: &str, role: &str) -> String {
    // libpq decodes `%20` but not the `+` a form encoder would write for the space.
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20role%3D{role}")
}
