//! Statements on the held writer connection: a transaction's statements go to SQLite's
//! thread with whatever must run before them in the same text (the transaction's opening,
//! the writes deferred until then), and a text of several statements answers each one's
//! rows or count apart.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use sea_orm::prelude::async_trait::async_trait;
use sea_orm::sqlx::sqlite::SqliteConnection;
use sea_orm::sqlx::{self, Executor};
use sea_orm::{
    ConnectionTrait, DbBackend, DbErr, ExecResult, QueryResult, RuntimeErr, Statement, Values,
};
use sea_query_sqlx::SqlxValues;
use tokio::sync::Mutex;

use super::{HeldSlot, JOIN, exec_err, query_err};

/// The writer connection, held: no other write can start until it is dropped.
#[derive(Debug)]
pub(crate) struct Locked {
    pub(super) held: Mutex<Held>,
}

/// The writer connection as one transaction holds it.
#[derive(Debug)]
pub(super) struct Held {
    /// `Some` until a dropped transaction hands it to its rollback.
    pub(super) slot: Option<HeldSlot>,
    /// What opens the transaction (`BEGIN`, or the savepoint of a write that joins a
    /// transaction left open), still to be sent with the next statement.
    pub(super) opening: Option<&'static str>,
    /// The opening was sent (and may have run), and neither its end nor a rollback has.
    pub(super) begun: bool,
    /// The opening was the savepoint of a write joining an open transaction.
    pub(super) joined: bool,
    /// Writes waiting for the next statement's text ([`crate::store::WriteTxn::defer`]).
    pub(super) deferred: Deferred,
    /// The writer's count of writes waiting to begin.
    pub(super) waiting: Arc<AtomicUsize>,
}

/// Statements held back to go in front of the transaction's next one, in one text.
#[derive(Debug, Default)]
pub(super) struct Deferred {
    /// Each statement followed by `;`.
    sql: String,
    values: Vec<sea_orm::Value>,
    pub(super) statements: usize,
}

/// A statement as it goes to SQLite's thread: with whatever must run before it in the
/// same text.
pub(super) struct Text<'s> {
    /// The caller's own text when nothing goes in front of it.
    sql: Cow<'s, str>,
    values: Option<Values>,
    /// How many statements come before the caller's (a `BEGIN`, deferred writes).
    leading: usize,
    /// Whether the text is kept prepared: not with deferred writes in front, whose mix
    /// rarely repeats (it would push texts that do out of sqlx's cache of prepared ones).
    persistent: bool,
}

impl Text<'_> {
    /// The text as a query, its values bound the way sea-orm's own SQLite driver binds them.
    pub(super) fn query(&mut self) -> sqlx::query::Query<'_, sqlx::Sqlite, SqlxValues> {
        let values = self.values.take().unwrap_or(Values(Vec::new()));
        sqlx::query_with(sqlx::AssertSqlSafe(&*self.sql), SqlxValues(values))
            .persistent(self.persistent)
    }
}

impl Held {
    /// `sql` (with its `values`) with what must run before it in the same text: the
    /// transaction's opening if it is owed (marking it sent: whether it ran or not, the
    /// transaction must now end in a rollback unless it commits), then the deferred writes,
    /// in the order they came.
    pub(super) fn prepare<'s>(
        &mut self,
        sql: &'s str,
        values: Option<Values>,
    ) -> Result<(&mut SqliteConnection, Text<'s>), DbErr> {
        let mut text = String::new();
        let mut leading = 0;
        if let Some(opening) = self.opening.take() {
            self.begun = true;
            self.joined = opening == JOIN;
            text.push_str(opening);
            text.push_str(";\n");
            leading += 1;
        }
        let deferred = std::mem::take(&mut self.deferred);
        let values = if deferred.statements == 0 {
            values
        } else {
            text.push_str(&deferred.sql);
            leading += deferred.statements;
            let mut all = deferred.values;
            all.extend(values.map(|Values(more)| more).unwrap_or_default());
            Some(Values(all))
        };
        let sql = if text.is_empty() {
            Cow::Borrowed(sql)
        } else {
            text.push_str(sql);
            Cow::Owned(text)
        };
        let text = Text {
            sql,
            values,
            leading,
            persistent: deferred.statements == 0,
        };
        Ok((self.conn()?, text))
    }

    /// Holds `stmt` (one statement) back for the next text.
    pub(super) fn defer(&mut self, stmt: Statement) {
        let deferred = &mut self.deferred;
        deferred.sql.push_str(&stmt.sql);
        deferred.sql.push_str(";\n");
        deferred
            .values
            .extend(stmt.values.map(|Values(values)| values).unwrap_or_default());
        deferred.statements += 1;
    }

    pub(super) fn conn(&mut self) -> Result<&mut SqliteConnection, DbErr> {
        self.slot
            .as_mut()
            .ok_or_else(|| DbErr::Conn(RuntimeErr::Internal("the writer was released".into())))?
            .conn()
    }
}

impl Locked {
    /// Runs `sql`, several statements with their `values` in order, in one hand-off (with
    /// `BEGIN` in front if it is owed): the rows of each statement, in order.
    pub(super) async fn read_together(
        &self,
        sql: &str,
        values: Values,
        statements: usize,
    ) -> Result<Vec<Vec<QueryResult>>, DbErr> {
        use futures::TryStreamExt;
        let mut held = self.held.lock().await;
        let (conn, mut text) = held.prepare(sql, Some(values))?;
        #[expect(
            deprecated,
            reason = "SQLite's driver runs a text of several statements with their values bound \
                      in turn, as every multi-statement text of the writer does; fetch_many \
                      is what tells their rows apart"
        )]
        let results: Vec<sqlx::Either<_, _>> = text
            .query()
            .fetch_many(conn)
            .try_collect()
            .await
            .map_err(query_err)?;
        sections_of(results, statements, text.leading)
    }
}

/// The rows of each of `statements` statements, from what a text of them answered (a
/// statement's end, or one of its rows, in order), after `leading` statements whose results
/// are not the caller's (a `BEGIN`, deferred writes).
pub(crate) fn sections_of<Done, Row: Into<QueryResult>>(
    results: Vec<sqlx::Either<Done, Row>>,
    statements: usize,
    leading: usize,
) -> Result<Vec<Vec<QueryResult>>, DbErr> {
    let mut sections = Vec::with_capacity(statements + leading);
    let mut rows = Vec::new();
    for result in results {
        match result {
            sqlx::Either::Left(_) => sections.push(std::mem::take(&mut rows)),
            sqlx::Either::Right(row) => rows.push(row.into()),
        }
    }
    if sections.len() == statements + leading {
        sections.drain(..leading);
    }
    if sections.len() != statements {
        return Err(DbErr::Custom(format!(
            "{statements} statements answered {} results",
            sections.len()
        )));
    }
    Ok(sections)
}

#[async_trait]
impl ConnectionTrait for Locked {
    fn get_database_backend(&self) -> DbBackend {
        DbBackend::Sqlite
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        use futures::TryStreamExt;
        let mut held = self.held.lock().await;
        let (conn, mut text) = held.prepare(&stmt.sql, stmt.values)?;
        let leading = text.leading;
        let query = text.query();
        if leading == 0 {
            return query.execute(conn).await.map(Into::into).map_err(exec_err);
        }
        // The count of changed rows is the caller's statement's own, the last one's (sqlx
        // would add up every statement's, and SQLite leaves a `BEGIN` the count of the
        // change before it).
        #[expect(
            deprecated,
            reason = "SQLite's driver runs a text of several statements with their values bound \
                      in turn; fetch_many is what tells their counts apart"
        )]
        let results: Vec<sqlx::Either<_, _>> = query
            .fetch_many(conn)
            .try_collect()
            .await
            .map_err(exec_err)?;
        results
            .into_iter()
            .filter_map(sqlx::Either::left)
            .last()
            .map(Into::into)
            .ok_or_else(|| DbErr::Custom("a statement answered no result".into()))
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        let mut held = self.held.lock().await;
        let (conn, mut text) = held.prepare(sql, None)?;
        if text.leading == 0 {
            return conn
                .execute(sqlx::AssertSqlSafe(text.sql.into_owned()))
                .await
                .map(Into::into)
                .map_err(exec_err);
        }
        text.query()
            .execute(conn)
            .await
            .map(Into::into)
            .map_err(exec_err)
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        let mut held = self.held.lock().await;
        let (conn, mut text) = held.prepare(&stmt.sql, stmt.values)?;
        text.query()
            .fetch_optional(conn)
            .await
            .map(|row| row.map(Into::into))
            .map_err(query_err)
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        let mut held = self.held.lock().await;
        let (conn, mut text) = held.prepare(&stmt.sql, stmt.values)?;
        text.query()
            .fetch_all(conn)
            .await
            .map(|rows| rows.into_iter().map(Into::into).collect())
            .map_err(query_err)
    }
}
