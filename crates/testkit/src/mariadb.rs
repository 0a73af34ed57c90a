//! A fresh MariaDB database per test.

use diesel::{Connection, MysqlConnection, RunQueryDsl};

use crate::{is_stale, unique_db_name, with_database};

/// Admin connection used to create and drop test databases.
pub fn admin_url() -> String {
    std::env::var("TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://app:app@127.0.0.1:3306/".to_owned())
}

/// An empty database that exists until this value is dropped.
pub struct TestMariaDb {
    name: String,
    url: String,
}

#[derive(diesel::QueryableByName)]
struct Name {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
}

impl TestMariaDb {
    /// Creates an empty database (no migrations applied).
    pub fn empty() -> Self {
        crate::process_init();
        let admin = admin_url();
        let mut conn = MysqlConnection::establish(&admin)
            .unwrap_or_else(|e| panic!("cannot reach MariaDB at TEST_MYSQL_URL: {e}"));
        drop_stale(&mut conn);
        let name = unique_db_name();
        diesel::sql_query(format!(
            "CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        ))
        .execute(&mut conn)
        .expect("create test database");
        let url = with_database(&admin, &name);
        Self { name, url }
    }

    /// Creates a database and applies `migrate` to it, as the service would at start-up.
    pub fn migrated(
        migrate: impl FnOnce(&mut MysqlConnection) -> anyhow::Result<Vec<String>>,
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

    pub fn connect(&self) -> MysqlConnection {
        MysqlConnection::establish(&self.url).expect("connect to test database")
    }
}

impl Drop for TestMariaDb {
    fn drop(&mut self) {
        if let Ok(mut conn) = MysqlConnection::establish(&admin_url()) {
            let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS `{}`", self.name))
                .execute(&mut conn);
        }
    }
}

fn drop_stale(conn: &mut MysqlConnection) {
    let names: Vec<Name> = diesel::sql_query(
        "SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 't\\_%'",
    )
        .load(conn)
        .unwrap_or_default();
    for n in names.into_iter().filter(|n| is_stale(&n.name)) {
        let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS `{}`", n.name)).execute(conn);
    }
}
