//! [`CommitWrite`]: a write whose remaining statements are all known at once, run with its
//! commit in as few round trips as the backend allows.
//!
//! On SQLite it is a write transaction on the writer connection: its `BEGIN` goes in the
//! first statement's text and its `COMMIT` in the last one's ([`super::writer`]). On
//! PostgreSQL, where a statement with bound values travels alone, a transaction of one
//! statement is three round trips (`BEGIN`, the statement, `COMMIT`), each waking a
//! PostgreSQL backend and a task of the server; a statement sent outside a transaction
//! commits as it ends, so a write of one statement needs no transaction around it.

use std::sync::Arc;

use sea_orm::sqlx::pool::PoolConnection;
use sea_orm::sqlx::postgres::PgConnection;
use sea_orm::sqlx::{self, Connection, Postgres};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, RuntimeErr, Statement, Values};
use sea_query_sqlx::SqlxValues;

use super::{Database, WriteTxn};

/// Where a write's last statements go, with its commit.
#[derive(Debug)]
pub enum CommitWrite {
    /// A write transaction already begun: the statements run in it, then it commits (on
    /// SQLite with the last statement, [`WriteTxn::commit_after`]).
    Txn(Box<WriteTxn>),
    /// PostgreSQL, nothing begun, on a connection taken from the pool: one statement runs
    /// on its own and commits as it ends; several run in a transaction.
    Alone(PoolConnection<Postgres>),
}

impl Database {
    /// Starts a write whose statements are all known at once ([`CommitWrite`]): a write
    /// transaction on SQLite; on PostgreSQL a pool connection, on which a write of one
    /// statement commits without `BEGIN` and `COMMIT` round trips. The connection is taken
    /// here, so a timestamp taken after this call is not delayed by the pool.
    pub async fn begin_commit_write(&self) -> Result<CommitWrite, DbErr> {
        match &self.writer {
            Some(_) => Ok(CommitWrite::Txn(Box::new(self.begin_write().await?))),
            None => {
                let conn = self
                    .conn
                    .get_postgres_connection_pool()
                    .acquire()
                    .await
                    .map_err(|err| DbErr::Conn(RuntimeErr::SqlxError(Arc::new(err))))?;
                Ok(CommitWrite::Alone(conn))
            }
        }
    }
}

impl From<WriteTxn> for CommitWrite {
    fn from(txn: WriteTxn) -> Self {
        Self::Txn(Box::new(txn))
    }
}

impl CommitWrite {
    /// The database it writes to.
    pub fn backend(&self) -> DbBackend {
        match self {
            Self::Txn(txn) => txn.get_database_backend(),
            Self::Alone(_) => DbBackend::Postgres,
        }
    }

    /// Runs `statements` in order and commits them, all or none: the first that fails stops
    /// the write and nothing of it is kept.
    pub async fn run(self, mut statements: Vec<Statement>) -> Result<(), DbErr> {
        match self {
            Self::Txn(txn) => {
                let Some(last) = statements.pop() else {
                    return txn.commit().await;
                };
                for statement in statements {
                    txn.execute_raw(statement).await?;
                }
                txn.commit_after(last).await
            }
            Self::Alone(mut conn) => {
                if statements.len() <= 1 {
                    for statement in statements {
                        execute(&mut conn, statement).await?;
                    }
                    return Ok(());
                }
                // Dropped unfinished (an error, a cancelled request), sqlx rolls it back
                // before the connection is used again.
                let mut txn = conn.begin().await.map_err(exec_err)?;
                for statement in statements {
                    execute(&mut txn, statement).await?;
                }
                txn.commit().await.map_err(exec_err)
            }
        }
    }
}

/// Runs `statement` on `conn`, its values bound the way sea-orm's own PostgreSQL driver
/// binds them.
async fn execute(conn: &mut PgConnection, statement: Statement) -> Result<(), DbErr> {
    let values = SqlxValues(statement.values.unwrap_or(Values(Vec::new())));
    sqlx::query_with(sqlx::AssertSqlSafe(statement.sql.as_str()), values)
        .execute(conn)
        .await
        .map(|_| ())
        .map_err(exec_err)
}

/// A failed statement, as sea-orm reports one (so that its checks of constraint
/// violations and transient failures apply).
fn exec_err(err: sqlx::Error) -> DbErr {
    DbErr::Exec(RuntimeErr::SqlxError(Arc::new(err)))
}
