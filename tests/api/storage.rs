//! Persistence: migrations on the configured backend, task leases and their records.

use bowline::actors::scheduler::{RunOutcome, SchedulerMsg};
use bowline::actors::{ActorKind, ask_slot};
use bowline::domain::frames::Frame;
use bowline::domain::ids::UserId;
use bowline::store::scheduled_tasks::{self, Lease};
use bowline::store::wal::{self, CheckpointReport};
use bowline::store::{Backend, Database, Unheard, WriteTxn};
use chrono::{Duration, Utc};
use sea_orm::ConnectionTrait;
use serde_json::json;

use crate::helpers::{TestDb, WAIT, spawn_app, test_settings_on};

#[tokio::test]
async fn the_configured_backend_is_migrated_at_start() {
    crate::helpers::init();
    let db = TestDb::create_empty().await;
    let app = crate::helpers::spawn_app_on(db).await;
    let expected = if std::env::var("TEST_DATABASE_URL").is_ok_and(|u| !u.is_empty()) {
        Backend::Postgres
    } else {
        Backend::Sqlite
    };
    assert_eq!(app.ctx().db.backend(), expected);
    app.ctx().db.ping().await.expect("database answers");
    assert!(
        scheduled_tasks::find(&app.ctx().db, "none")
            .await
            .expect("the migrated table exists")
            .is_none()
    );
}

#[tokio::test]
async fn migrations_are_idempotent_across_restarts() {
    crate::helpers::init();
    let db = TestDb::create_empty().await;
    for _ in 0..2 {
        let settings = test_settings_on(&db);
        let database = Database::connect(&settings.storage).await.expect("connect");
        database.migrate().await.expect("migrate");
        database.close().await.expect("close");
    }
}

#[tokio::test]
async fn the_write_ahead_log_starts_over_after_a_background_checkpoint() {
    crate::helpers::init();
    let test_db = TestDb::create().await;
    let settings = test_settings_on(&test_db);
    let db = Database::connect(&settings.storage).await.expect("connect");
    db.migrate().await.expect("migrate");
    if db.backend() == Backend::Postgres {
        let report = wal::checkpoint(&db).await.expect("checkpoint");
        assert_eq!(report, CheckpointReport::default(), "nothing to do");
        return;
    }
    // Each write commits at least one page to the log.
    let now = Utc::now();
    let until = now + Duration::minutes(5);
    let writes = usize::try_from(wal::RESTART_AFTER_FRAMES).expect("frames");
    for n in 0..writes {
        scheduled_tasks::acquire(&db, &format!("task-{n}"), "a", now, until)
            .await
            .expect("write");
    }
    let full = wal::checkpoint(&db).await.expect("checkpoint");
    assert!(full.log_frames >= wal::RESTART_AFTER_FRAMES, "{full:?}");
    assert!(full.restarted, "{full:?}");
    scheduled_tasks::acquire(&db, "after", "a", now, until)
        .await
        .expect("write");
    let after = wal::checkpoint(&db).await.expect("checkpoint");
    assert!(
        after.log_frames < 20,
        "the write after the checkpoint starts the log over: {after:?}"
    );
    assert!(!after.restarted);
    db.close().await.expect("close");
}

#[tokio::test]
async fn a_task_lease_is_held_by_one_instance_at_a_time() {
    let app = spawn_app().await;
    let db = &app.ctx().db;
    let now = Utc::now();
    let until = now + Duration::minutes(5);
    assert_eq!(
        scheduled_tasks::acquire(db, "sweep", "instance-a", now, until)
            .await
            .expect("acquire"),
        Lease::Acquired
    );
    assert_eq!(
        scheduled_tasks::acquire(db, "sweep", "instance-b", now, until)
            .await
            .expect("acquire"),
        Lease::HeldElsewhere
    );
    // An expired lease can be taken over.
    let later = until + Duration::seconds(1);
    assert_eq!(
        scheduled_tasks::acquire(
            db,
            "sweep",
            "instance-b",
            later,
            later + Duration::minutes(5)
        )
        .await
        .expect("acquire"),
        Lease::Acquired
    );
    scheduled_tasks::release(db, "sweep", "instance-b", later, "ok")
        .await
        .expect("release");
    assert_eq!(
        scheduled_tasks::acquire(
            db,
            "sweep",
            "instance-a",
            later,
            later + Duration::minutes(5)
        )
        .await
        .expect("acquire"),
        Lease::Acquired
    );
}

#[tokio::test]
async fn a_cleanup_run_is_recorded() {
    let app = spawn_app().await;
    let ctx = app.ctx().clone();
    let outcome = ask_slot(&ctx.actors.scheduler, ActorKind::Scheduler, WAIT, |reply| {
        SchedulerMsg::RunNow {
            task: "cleanup".into(),
            reply,
        }
    })
    .await
    .expect("scheduler answers");
    assert_eq!(outcome, RunOutcome::Completed);
    let row = scheduled_tasks::find(&ctx.db, "cleanup")
        .await
        .expect("query")
        .expect("cleanup has a row");
    assert!(row.runs >= 1);
    assert_eq!(row.last_outcome.as_deref(), Some("ok"));
    assert!(row.last_finished_at.is_some());
    assert!(row.lease_owner.is_none(), "the lease was released");
}

#[tokio::test]
async fn write_transactions_are_read_committed_whatever_the_database_defaults() {
    crate::helpers::init();
    let db = TestDb::create().await;
    let settings = test_settings_on(&db);
    if let Some(url) = db.database_url() {
        // An operator made every transaction serializable and read-only by default.
        let admin = sea_orm::Database::connect(url).await.expect("connect");
        admin
            .execute_unprepared(
                "DO $$ BEGIN \
                   EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L', \
                     current_database(), 'serializable'); \
                   EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = %L', \
                     current_database(), 'on'); \
                 END $$",
            )
            .await
            .expect("alter database");
        admin.close().await.expect("close");
    }
    let database = Database::connect(&settings.storage).await.expect("connect");
    database.migrate().await.expect("migrate");
    let txn = database.begin_write().await.expect("begin");
    if database.backend() == Backend::Postgres {
        let row = txn
            .query_one_raw(sea_orm::Statement::from_string(
                sea_orm::DbBackend::Postgres,
                "SELECT current_setting('transaction_isolation') AS isolation, \
                 current_setting('transaction_read_only') AS read_only",
            ))
            .await
            .expect("query")
            .expect("row");
        let isolation: String = row.try_get("", "isolation").expect("isolation");
        let read_only: String = row.try_get("", "read_only").expect("read_only");
        assert_eq!(
            (isolation.as_str(), read_only.as_str()),
            ("read committed", "off")
        );
    }
    scheduled_tasks::find(&database, "none")
        .await
        .expect("reads in a write transaction's pool");
    txn.rollback().await.expect("rollback");
    database.close().await.expect("close");
}

/// Rows of the probe table, read outside any write transaction.
async fn probe_rows(db: &Database) -> Vec<i64> {
    let read = db.begin_read().await.expect("read");
    probe_rows_in(&read).await.expect("select")
}

/// Inserts `n` into the probe table.
async fn insert_probe(txn: &impl ConnectionTrait, n: i64) -> Result<(), sea_orm::DbErr> {
    txn.execute_unprepared(&format!("INSERT INTO write_probe (n) VALUES ({n})"))
        .await
        .map(|_| ())
}

/// A migrated database of its own with the probe table, holding 1.
async fn probe_database() -> (TestDb, Database) {
    crate::helpers::init();
    let test_db = TestDb::create().await;
    let settings = test_settings_on(&test_db);
    let db = Database::connect(&settings.storage).await.expect("connect");
    db.migrate().await.expect("migrate");
    let txn = db.begin_write().await.expect("begin");
    txn.execute_unprepared("CREATE TABLE write_probe (n BIGINT PRIMARY KEY)")
        .await
        .expect("create");
    insert_probe(&txn, 1).await.expect("insert 1");
    txn.commit().await.expect("commit");
    (test_db, db)
}

/// The statement inserting `n` into the probe table.
fn probe_statement(txn: &impl ConnectionTrait, n: i64) -> sea_orm::Statement {
    sea_orm::Statement::from_string(
        txn.get_database_backend(),
        format!("INSERT INTO write_probe (n) VALUES ({n})"),
    )
}

/// Writes on a pool connection, beside the writer: it must not wait for a write lock an
/// unfinished transaction still holds (SQLite would make it wait out its busy timeout, 10 s,
/// then fail).
async fn write_beside(db: &Database) {
    let now = Utc::now();
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        scheduled_tasks::acquire(db, "beside", "a", now, now + Duration::minutes(5)),
    )
    .await
    .expect("a write on another connection does not wait")
    .expect("write");
}

/// A write transaction, begun without waiting for an earlier one.
async fn begin_promptly(db: &Database) -> WriteTxn {
    tokio::time::timeout(WAIT, db.begin_write())
        .await
        .expect("the writer is free again")
        .expect("begin")
}

#[tokio::test]
async fn a_write_transaction_dropped_unfinished_is_rolled_back_and_frees_the_database() {
    let (_test_db, db) = probe_database().await;

    // Dropped after a write: rolled back, and writers on other connections are not held up.
    let txn = db.begin_write().await.expect("begin");
    insert_probe(&txn, 2).await.expect("insert 2");
    drop(txn);
    write_beside(&db).await;

    // Its first statement failed: the transaction still ends, and the next one starts.
    let txn = db.begin_write().await.expect("begin");
    insert_probe(&txn, 1)
        .await
        .expect_err("1 exists: the first statement fails");
    drop(txn);

    // Cancelled halfway (a request whose client went away): rolled back too.
    let (written, wait) = tokio::sync::oneshot::channel();
    let writer = db.clone();
    let cancelled = tokio::spawn(async move {
        let txn = writer.begin_write().await.expect("begin");
        insert_probe(&txn, 3).await.expect("insert 3");
        written.send(()).expect("test waits");
        std::future::pending::<()>().await;
        txn.commit().await
    });
    tokio::time::timeout(WAIT, wait)
        .await
        .expect("the cancelled write started")
        .expect("written");
    cancelled.abort();
    assert!(cancelled.await.expect_err("aborted").is_cancelled());

    // An empty transaction commits, and a later one commits what it wrote.
    db.begin_write()
        .await
        .expect("begin")
        .commit()
        .await
        .expect("commit nothing");
    let txn = begin_promptly(&db).await;
    insert_probe(&txn, 4).await.expect("insert 4");
    txn.commit().await.expect("commit");
    assert_eq!(probe_rows(&db).await, vec![1, 4]);
    db.close().await.expect("close");
}

#[tokio::test]
async fn a_unit_of_work_commits_on_ok_and_rolls_back_on_err_or_discard() {
    let (_test_db, db) = probe_database().await;

    // Ok: committed, and its value returned.
    let value = db
        .write(async |txn| {
            insert_probe(txn, 2).await?;
            Ok::<_, sea_orm::DbErr>("kept")
        })
        .await
        .expect("committed");
    assert_eq!(value, "kept");

    // Err after a write: nothing of it stays, and the error is the caller's.
    let refused = db
        .write(async |txn| {
            insert_probe(txn, 3).await?;
            Err::<(), _>(sea_orm::DbErr::Custom("refused".into()))
        })
        .await
        .expect_err("the work's error");
    assert_eq!(refused.to_string(), "Custom Error: refused");

    // A failed statement ends the work with its error, rolled back.
    db.write(async |txn| {
        insert_probe(txn, 4).await?;
        insert_probe(txn, 1).await
    })
    .await
    .expect_err("1 exists");

    // Discarded: an answer, not an error, and nothing written stays.
    let answer = db
        .write(async |txn| {
            insert_probe(txn, 5).await?;
            txn.discard();
            Ok::<_, sea_orm::DbErr>("not kept")
        })
        .await
        .expect("an answer");
    assert_eq!(answer, "not kept");

    // The writer is free for the next one.
    let txn = begin_promptly(&db).await;
    insert_probe(&txn, 6).await.expect("insert 6");
    txn.commit().await.expect("commit");
    assert_eq!(probe_rows(&db).await, vec![1, 2, 6]);
    db.close().await.expect("close");
}

#[tokio::test]
async fn a_commit_sent_with_the_last_statement_is_all_or_nothing() {
    let (_test_db, db) = probe_database().await;

    // After other writes: all of them are committed.
    let txn = db.begin_write().await.expect("begin");
    insert_probe(&txn, 2).await.expect("insert 2");
    let last = probe_statement(&txn, 3);
    txn.commit_after(last).await.expect("insert 3 and commit");

    // As the only statement.
    let txn = db.begin_write().await.expect("begin");
    let only = probe_statement(&txn, 4);
    txn.commit_after(only).await.expect("insert 4 and commit");

    // The last statement fails: nothing of the transaction is committed, and the writer is
    // free for the next one.
    let txn = db.begin_write().await.expect("begin");
    insert_probe(&txn, 5).await.expect("insert 5");
    let existing = probe_statement(&txn, 1);
    txn.commit_after(existing)
        .await
        .expect_err("1 exists: the last statement fails");
    write_beside(&db).await;
    let txn = begin_promptly(&db).await;
    insert_probe(&txn, 6).await.expect("insert 6");
    txn.commit().await.expect("commit");
    assert_eq!(probe_rows(&db).await, vec![1, 2, 3, 4, 6]);
    db.close().await.expect("close");
}

/// The insert of `n` into the probe table, as a deferred write.
fn probe_insert(n: i64) -> sea_orm::sea_query::InsertStatement {
    use sea_orm::sea_query::{Alias, Query};
    Query::insert()
        .into_table(Alias::new("write_probe"))
        .columns([Alias::new("n")])
        .values_panic([n.into()])
        .to_owned()
}

/// Defers `n`'s insert into the probe table.
async fn defer_probe(txn: &WriteTxn, n: i64) -> Result<(), sea_orm::DbErr> {
    txn.defer(probe_insert(n)).await
}

/// Rows of the probe table, as `conn` (a transaction, or a read) sees them.
async fn probe_rows_in(conn: &impl ConnectionTrait) -> Result<Vec<i64>, sea_orm::DbErr> {
    let rows = conn
        .query_all_raw(sea_orm::Statement::from_string(
            conn.get_database_backend(),
            "SELECT n FROM write_probe ORDER BY n",
        ))
        .await?;
    Ok(rows
        .iter()
        .map(|row| row.try_get_by_index::<i64>(0).expect("n"))
        .collect())
}

#[tokio::test]
async fn deferred_writes_run_in_order_before_the_next_statement_and_fail_it() {
    use sea_orm::sea_query::{Alias, Query};
    let (_test_db, db) = probe_database().await;

    // Deferred writes are seen by the transaction's next read, in the order they came.
    let txn = db.begin_write().await.expect("begin");
    defer_probe(&txn, 3).await.expect("defer 3");
    // A value PostgreSQL's deferred text does not write out (an unsigned number) keeps its
    // write bound, run after the ones deferred before it.
    let unsigned = Query::insert()
        .into_table(Alias::new("write_probe"))
        .columns([Alias::new("n")])
        .values_panic([2u64.into()])
        .to_owned();
    txn.defer(unsigned).await.expect("defer 2");
    defer_probe(&txn, 0).await.expect("defer 0");
    assert_eq!(probe_rows_in(&txn).await.expect("read"), vec![0, 1, 2, 3]);
    // A counted statement after deferred ones is answered its own count.
    defer_probe(&txn, 4).await.expect("defer 4");
    defer_probe(&txn, 5).await.expect("defer 5");
    let moved = txn
        .execute_raw(sea_orm::Statement::from_string(
            txn.get_database_backend(),
            "UPDATE write_probe SET n = n + 10 WHERE n = 5",
        ))
        .await
        .expect("update");
    assert_eq!(moved.rows_affected(), 1);
    // Deferred writes left at the end go with the commit.
    defer_probe(&txn, 6).await.expect("defer 6");
    txn.commit().await.expect("commit");
    assert_eq!(probe_rows(&db).await, vec![0, 1, 2, 3, 4, 6, 15]);

    // A transaction of deferred writes alone commits them.
    let txn = begin_promptly(&db).await;
    defer_probe(&txn, 7).await.expect("defer 7");
    txn.commit().await.expect("commit");

    // Dropped or discarded before its commit, a deferred write leaves nothing.
    let txn = begin_promptly(&db).await;
    defer_probe(&txn, 8).await.expect("defer 8");
    drop(txn);
    db.write(async |txn| {
        defer_probe(txn, 9).await?;
        txn.discard();
        Ok::<_, sea_orm::DbErr>(())
    })
    .await
    .expect("an answer");

    // A deferred write that fails fails the transaction: nothing of it is committed, and the
    // writer is free for the next one.
    let failed = db
        .write(async |txn| {
            defer_probe(txn, 10).await?;
            defer_probe(txn, 1).await?;
            probe_rows_in(txn).await
        })
        .await;
    assert!(failed.is_err(), "1 exists: {failed:?}");
    // It waits, and fails the commit's text (on SQLite the one handed to SQLite's thread,
    // on PostgreSQL the one round trip with the commit).
    let txn = begin_promptly(&db).await;
    defer_probe(&txn, 1).await.expect("defer 1");
    let last = probe_statement(&txn, 11);
    txn.commit_after(last)
        .await
        .expect_err("1 exists: the deferred write fails the commit");
    write_beside(&db).await;
    assert_eq!(probe_rows(&db).await, vec![0, 1, 2, 3, 4, 6, 7, 15]);

    db.close().await.expect("close");
}

/// The one number `sql` reads on `conn`.
async fn number(conn: &impl ConnectionTrait, sql: &str) -> i64 {
    conn.query_one_raw(sea_orm::Statement::from_string(
        conn.get_database_backend(),
        sql,
    ))
    .await
    .expect("read")
    .expect("a row")
    .try_get_by_index(0)
    .expect("a number")
}

/// How many statements the connection `conn` runs on keeps prepared (PostgreSQL).
async fn prepared_statements(conn: &impl ConnectionTrait) -> i64 {
    number(conn, "SELECT count(*) FROM pg_prepared_statements").await
}

#[tokio::test]
async fn a_read_planned_now_is_not_kept_prepared() {
    use sea_orm::sea_query::{Alias, Expr, ExprTrait, Query};
    let (_test_db, db) = probe_database().await;
    let txn = db.begin_write().await.expect("begin");
    insert_probe(&txn, 2).await.expect("insert 2");
    let read = |at_least: i64| {
        Query::select()
            .column(Alias::new("n"))
            .from(Alias::new("write_probe"))
            .and_where(Expr::col(Alias::new("n")).gte(at_least))
            .order_by(Alias::new("n"), sea_orm::sea_query::Order::Asc)
            .to_owned()
    };
    let numbers = |rows: Vec<sea_orm::QueryResult>| -> Vec<i64> {
        rows.iter()
            .map(|row| row.try_get_by_index::<i64>(0).expect("n"))
            .collect()
    };
    // It reads what the transaction wrote, like any read of it.
    let rows = txn.read_planned_now(&read(1)).await.expect("read");
    assert_eq!(numbers(rows), vec![1, 2]);
    if db.backend() == Backend::Postgres {
        // PostgreSQL keeps a prepared statement's plan, made while its tables were small, until
        // they are next analyzed: this read is planned for its run alone, and kept nowhere.
        let before = prepared_statements(&txn).await;
        let rows = txn.read_planned_now(&read(2)).await.expect("read");
        assert_eq!(numbers(rows), vec![2]);
        assert_eq!(
            prepared_statements(&txn).await,
            before,
            "nothing kept prepared"
        );
        // The same read as an ordinary statement is kept (what the count would show).
        let kept = sea_orm::DbBackend::Postgres.build(&read(2));
        txn.query_all_raw(kept).await.expect("read");
        assert_eq!(
            prepared_statements(&txn).await,
            before + 1,
            "the ordinary read is kept"
        );
    }
    txn.commit().await.expect("commit");
    db.close().await.expect("close");
}

/// `PRAGMA temp_store` as `conn` sees it (2: memory).
async fn temp_store(conn: &impl ConnectionTrait) -> i64 {
    number(conn, "PRAGMA temp_store").await
}

#[tokio::test]
async fn sqlite_statement_journals_stay_in_memory() {
    let (_test_db, db) = probe_database().await;
    if db.backend() == Backend::Postgres {
        return;
    }
    // A multi-row statement in a transaction journals the pages it changes; on disk, past
    // 64 KiB, that was a new temporary file per batch of creates.
    let txn = db.begin_write().await.expect("begin");
    assert_eq!(temp_store(&txn).await, 2, "the writer connection");
    let rows: Vec<String> = (10..2_000).map(|n| format!("({n})")).collect();
    txn.execute_unprepared(&format!(
        "INSERT INTO write_probe (n) VALUES {}",
        rows.join(", ")
    ))
    .await
    .expect("a statement of many rows");
    txn.commit().await.expect("commit");
    let read = db.begin_read().await.expect("begin read");
    assert_eq!(temp_store(&read).await, 2, "the pool's connections");
    read.commit().await.expect("end read");
}

/// A write's commit may leave waiting for this instance to hear its frames to whoever
/// answers the change (a calendar's actor goes on to its next batch meanwhile): on
/// PostgreSQL the commit returns with the notice left unheard, and once that wait is over
/// the instance's streams have the frames. On SQLite, which has no bus, nothing is left:
/// the frames are delivered at the commit.
#[tokio::test]
async fn a_commit_may_leave_hearing_its_frames_to_whoever_answers() {
    let app = spawn_app().await;
    let user = app.sign_up("unheard@example.com").await;
    let mut stream = app.stream(&user).await;
    let services = &app.ctx().shared.services;
    let postgres = app.db_connection().await.get_database_backend() == sea_orm::DbBackend::Postgres;

    let unheard = Unheard::default();
    let txn = services.db.begin_write().await.expect("begin");
    txn.hear_later(&unheard);
    services.within(&txn).broadcast(
        [&UserId::from(user.id.as_str())],
        &Frame::new("marker", json!({ "n": 1 })),
    );
    txn.commit().await.expect("commit");
    assert_eq!(
        unheard.is_empty(),
        !postgres,
        "the commit left its notice to hear (PostgreSQL) or had none (SQLite)"
    );
    unheard.heard().await;
    assert!(unheard.is_empty(), "waited on once");
    let frame = stream.next_frame().await;
    assert_eq!(
        (&frame["type"], &frame["payload"]["n"]),
        (&json!("marker"), &json!(1))
    );
}
