//! Statements of fixed text that stay prepared on their connection.
//!
//! diesel never reuses a prepared statement built with `sql_query`, `dsl::sql` or its `UPDATE`
//! builder: each run costs MariaDB a prepare, an execute and a close, three round trips where
//! one would do. A [`Fixed`] statement declares itself safe to cache, so diesel keys it by its
//! text and prepares it once per connection. Only for statements on the hot paths (validate,
//! consume); the text must not be built from data, which is what makes the caching safe.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::mysql::Mysql;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{Date, Datetime, Integer, Text, Untyped};
use diesel::{QueryResult, RunQueryDsl};

/// One bound value.
#[derive(Debug, Clone)]
pub enum Bind {
    Text(String),
    Int(i32),
    Date(NaiveDate),
    Datetime(NaiveDateTime),
}

/// A statement of `'static` text with its bound values, run like `sql_query`.
#[derive(Debug, Clone)]
pub struct Fixed {
    sql: &'static str,
    binds: Vec<Bind>,
}

/// A statement of fixed text; bind values in the order of the `?` they fill.
pub fn fixed(sql: &'static str, binds: Vec<Bind>) -> Fixed {
    Fixed { sql, binds }
}

impl QueryFragment<Mysql> for Fixed {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Mysql>) -> QueryResult<()> {
        // diesel writes the placeholder of each bind itself; the text around them goes as is.
        let mut parts = self.sql.split('?');
        out.push_sql(parts.next().unwrap_or_default());
        let mut binds = self.binds.iter();
        for part in parts {
            match binds.next() {
                Some(Bind::Text(v)) => out.push_bind_param::<Text, _>(v)?,
                Some(Bind::Int(v)) => out.push_bind_param::<Integer, _>(v)?,
                Some(Bind::Date(v)) => out.push_bind_param::<Date, _>(v)?,
                Some(Bind::Datetime(v)) => out.push_bind_param::<Datetime, _>(v)?,
                None => {
                    return Err(diesel::result::Error::QueryBuilderError(
                        "a fixed statement has more placeholders than values".into(),
                    ));
                }
            }
            out.push_sql(part);
        }
        if binds.next().is_some() {
            return Err(diesel::result::Error::QueryBuilderError(
                "a fixed statement has more values than placeholders".into(),
            ));
        }
        Ok(())
    }
}

impl QueryId for Fixed {
    // No static id: the statement cache keys the statement by its text and bind types.
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl Query for Fixed {
    type SqlType = Untyped;
}

impl<Conn> RunQueryDsl<Conn> for Fixed {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_cacheable() {
        let q = fixed("SELECT ?", vec![Bind::Int(1)]);
        assert!(matches!(q.is_safe_to_cache_prepared(&Mysql), Ok(true)));
        let sql = diesel::debug_query::<Mysql, _>(&q).to_string();
        assert!(sql.starts_with("SELECT ?"), "{sql}");
        let short = fixed("SELECT ?, ?", vec![Bind::Int(1)]);
        assert!(short.is_safe_to_cache_prepared(&Mysql).is_err());
    }
}
