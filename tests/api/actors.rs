//! Supervision: a panicking actor is restarted and counted, its callers get 503 instead of
//! hanging, and the scheduler skips a tick whose previous run is still active.

use std::sync::Arc;
use std::time::Duration;

use bowline::AppError;
use bowline::actors::scheduler::{RunOutcome, SchedulerMsg, TaskScope, TaskSpec};
use bowline::actors::{ActorKind, ask_slot};
use tokio::sync::{Notify, mpsc};

use crate::helpers::{WAIT, sample, spawn_app, spawn_app_built};

#[tokio::test]
async fn a_panicking_scheduler_is_restarted_counted_and_works_again() {
    let app = spawn_app().await;
    let ctx = app.ctx().clone();
    let mut stats = ctx.actors.stats.subscribe();
    let timeout = ctx.settings.call_timeout();

    // The caller of the actor that dies answering gets 503, not a hang.
    let result = ask_slot(
        &ctx.actors.scheduler,
        ActorKind::Scheduler,
        timeout,
        |reply| SchedulerMsg::InjectPanic { reply },
    )
    .await;
    assert!(
        matches!(result, Err(AppError::Unavailable(_))),
        "{result:?}"
    );

    tokio::time::timeout(
        WAIT,
        stats.wait_for(|s| s.restarts_of(ActorKind::Scheduler) >= 1),
    )
    .await
    .expect("restarted within the wait")
    .expect("stats channel open");
    let snapshot = ctx.actors.stats.snapshot();
    assert_eq!(snapshot.failures_of(ActorKind::Scheduler), 1);
    assert_eq!(snapshot.restarts_of(ActorKind::Scheduler), 1);

    let text = app.metrics_text().await;
    assert_eq!(
        sample(&text, r#"svc_actor_restarts_total{actor="scheduler"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"svc_actor_failures_total{actor="scheduler"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"svc_actors{actor="scheduler"}"#),
        Some(1.0),
        "{text}"
    );

    // The new incarnation answers, and the rest of the server never noticed.
    let outcome = ask_slot(
        &ctx.actors.scheduler,
        ActorKind::Scheduler,
        timeout,
        |reply| SchedulerMsg::RunNow {
            task: "cleanup".into(),
            reply,
        },
    )
    .await;
    assert_eq!(outcome.expect("cleanup runs"), RunOutcome::Completed);
    assert!(app.get("/api/v1/server/ok").await.status().is_success());
}

#[tokio::test]
async fn unknown_tasks_are_a_domain_error_not_a_crash() {
    let app = spawn_app().await;
    let ctx = app.ctx().clone();
    let result = ask_slot(&ctx.actors.scheduler, ActorKind::Scheduler, WAIT, |reply| {
        SchedulerMsg::RunNow {
            task: "no-such-task".into(),
            reply,
        }
    })
    .await;
    assert!(matches!(result, Err(AppError::NotFound(_))), "{result:?}");
    assert_eq!(
        ctx.actors
            .stats
            .snapshot()
            .failures_of(ActorKind::Scheduler),
        0
    );
}

async fn run_named(ctx: &bowline::context::Ctx, task: &str) -> Result<RunOutcome, AppError> {
    ask_slot(&ctx.actors.scheduler, ActorKind::Scheduler, WAIT, |reply| {
        SchedulerMsg::RunNow {
            task: task.into(),
            reply,
        }
    })
    .await
}

#[tokio::test]
async fn a_tick_while_the_previous_run_is_active_is_skipped_and_counted() {
    let release = Arc::new(Notify::new());
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let task = {
        let release = release.clone();
        TaskSpec::new(
            "probe",
            Duration::from_secs(3600),
            TaskScope::Instance,
            move |_| {
                let release = release.clone();
                let started_tx = started_tx.clone();
                async move {
                    let _ = started_tx.send(());
                    release.notified().await;
                    Ok(())
                }
            },
        )
    };
    let app = spawn_app_built(|_| {}, |builder| builder.with_task(task)).await;
    let ctx = app.ctx().clone();
    let run_now = |ctx: bowline::context::Ctx| async move {
        ask_slot(&ctx.actors.scheduler, ActorKind::Scheduler, WAIT, |reply| {
            SchedulerMsg::RunNow {
                task: "probe".into(),
                reply,
            }
        })
        .await
    };

    let first = tokio::spawn(run_now(ctx.clone()));
    tokio::time::timeout(WAIT, started.recv())
        .await
        .expect("first run starts")
        .expect("channel open");

    // A tick now finds the run active: skipped. A request now joins the active run.
    let scheduler = ctx.actors.scheduler.get().expect("scheduler is up");
    scheduler
        .send_message(SchedulerMsg::Tick { task: "probe" })
        .expect("tick delivered");
    let (joined_port, joined) = tokio::sync::oneshot::channel();
    scheduler
        .send_message(SchedulerMsg::RunNow {
            task: "probe".into(),
            reply: joined_port.into(),
        })
        .expect("request delivered");
    // The mailbox is FIFO: once this answer arrives, the tick and the join were handled.
    let barrier = run_named(&ctx, "no-such-task").await;
    assert!(matches!(barrier, Err(AppError::NotFound(_))), "{barrier:?}");

    release.notify_one();
    let first = tokio::time::timeout(WAIT, first)
        .await
        .expect("first run ends within the wait")
        .expect("join");
    let joined = tokio::time::timeout(WAIT, joined)
        .await
        .expect("joined request answered within the wait")
        .expect("reply port");
    assert_eq!(first.expect("scheduler answers"), RunOutcome::Completed);
    assert_eq!(joined.expect("scheduler answers"), RunOutcome::Completed);
    assert!(started.try_recv().is_err(), "the job ran once");
    let text = app.metrics_text().await;
    assert_eq!(
        sample(&text, r#"svc_scheduled_task_skips_total{task="probe"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"svc_scheduled_task_runs_total{outcome="ok",task="probe"}"#
        )
        .or_else(|| sample(
            &text,
            r#"svc_scheduled_task_runs_total{task="probe",outcome="ok"}"#
        )),
        Some(1.0),
        "{text}"
    );

    // The run state was released: the next run goes ahead.
    let third = tokio::spawn(run_now(ctx.clone()));
    tokio::time::timeout(WAIT, started.recv())
        .await
        .expect("third run starts")
        .expect("channel open");
    release.notify_one();
    let third = third.await.expect("join").expect("scheduler answers");
    assert_eq!(third, RunOutcome::Completed);
}

#[tokio::test]
async fn a_graceful_stop_stops_the_actor_tree() {
    let app = spawn_app().await;
    let ctx = app.ctx().clone();
    assert!(ctx.actors.scheduler.get().is_some());
    app.stop().await.expect("clean stop");
    assert!(
        ctx.actors.scheduler.get().is_none(),
        "the scheduler was stopped"
    );
    let result = ask_slot(&ctx.actors.scheduler, ActorKind::Scheduler, WAIT, |reply| {
        SchedulerMsg::RunNow {
            task: "cleanup".into(),
            reply,
        }
    })
    .await;
    assert!(
        matches!(result, Err(AppError::Unavailable(_))),
        "{result:?}"
    );
    assert_eq!(
        ctx.actors
            .stats
            .snapshot()
            .failures_of(ActorKind::Scheduler),
        0
    );
}
