//! Statements of fixed text that stay prepared on their connection.
//!
//! diesel never reuses a prepared statement built with `sql_query`, `dsl::sql` or its `UPDATE`
//! builder: MariaDB pays a prepare, an execute and a close for each run, Postgres a parse and a
//! plan. A [`Fixed`] statement declares itself safe to cache, so diesel keys it by its text and
//! bind types and prepares it once per connection. Only for statements on hot paths; the text
//! must not be built from data, which is what makes the caching safe.
//!
//! The text marks each bound value with `?`; diesel writes the backend's own placeholder
//! (`?` or `$n`) in its place. Each service says, through [`PushBind`], which SQL type each of its
//! values binds as on its database.

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::Untyped;
use diesel::{QueryResult, RunQueryDsl};

/// A value that knows how to bind itself on `DB`.
pub trait PushBind<DB: Backend> {
    fn push_bind<'b>(&'b self, out: &mut AstPass<'_, 'b, DB>) -> QueryResult<()>;
}

/// A statement of `'static` text with its bound values, run like `sql_query`.
#[derive(Debug, Clone)]
pub struct Fixed<B> {
    sql: &'static str,
    binds: Vec<B>,
}

/// A statement of fixed text; bind values in the order of the `?` they fill.
pub fn fixed<B>(sql: &'static str, binds: Vec<B>) -> Fixed<B> {
    Fixed { sql, binds }
}

impl<DB: Backend, B: PushBind<DB>> QueryFragment<DB> for Fixed<B> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        let mut parts = self.sql.split('?');
        out.push_sql(parts.next().unwrap_or_default());
        let mut binds = self.binds.iter();
        for part in parts {
            let Some(bind) = binds.next() else {
                return Err(diesel::result::Error::QueryBuilderError(
                    "a fixed statement has more placeholders than values".into(),
                ));
            };
            bind.push_bind(&mut out)?;
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

impl<B> QueryId for Fixed<B> {
    // No static id: the statement cache keys the statement by its text and bind types.
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<B> Query for Fixed<B> {
    type SqlType = Untyped;
}

impl<B, Conn> RunQueryDsl<Conn> for Fixed<B> {}
