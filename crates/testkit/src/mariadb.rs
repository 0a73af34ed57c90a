//! A fresh MariaDB database per test.

use diesel::{MysqlConnection, RunQueryDsl};

use crate::database::{Server, TestDatabase};
use crate::is_stale;

pub struct MariaDb;

/// An empty database that exists until this value is dropped.
pub type TestMariaDb = TestDatabase<MariaDb>;

#[derive(diesel::QueryableByName)]
struct Name {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
}

impl Server for MariaDb {
    type Conn = MysqlConnection;
    const NAME: &'static str = "MariaDB";
    const ADMIN_URL_VAR: &'static str = "TEST_MYSQL_URL";
    const DEFAULT_ADMIN_URL: &'static str = "mysql://app:app@127.0.0.1:3306/";

    fn create_database(conn: &mut MysqlConnection, name: &str) -> diesel::QueryResult<usize> {
        diesel::sql_query(format!(
            "CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        ))
        .execute(conn)
    }

    fn drop_database(conn: &mut MysqlConnection, name: &str) -> diesel::QueryResult<usize> {
        diesel::sql_query(format!("DROP DATABASE IF EXISTS `{name}`")).execute(conn)
    }

    fn stale(conn: &mut MysqlConnection) -> Vec<String> {
        diesel::sql_query(
            "SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 't\\_%'",
        )
        .load::<Name>(conn)
        .unwrap_or_default()
        .into_iter()
        .map(|n| n.name)
        .filter(|n| is_stale(n))
        .collect()
    }
}
