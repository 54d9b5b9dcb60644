//! `bowline-stress --wire musubi` against the original implementation's wire: every
//! scenario runs through a loopback stand-in ([`stand_in`]) that takes Bowline's extras out
//! of what a real in-process Bowline server answers (event revisions, deletions in deltas,
//! Bowline-only headers, the metrics listener). The runs must pass on the checks that ran,
//! say which were weakened or skipped, and the stand-in must really have taken the extras out
//! (it counts them); a frame it drops on purpose must still fail the frame check.

mod stand_in;

use serde_json::Value;

use crate::helpers::{StressRun, run_stress, stress_app};
use stand_in::{Fault, StandIn, Stripped};

/// Runs `bowline-stress` against `stand_in` with `args` (quiet, reading the stand-in's
/// `/metrics`, which it refuses) and returns its exit code and its JSON report.
async fn run(stand_in: &StandIn, args: &[&str]) -> (i32, Value) {
    let metrics = format!("{}/metrics", stand_in.base);
    run_with(stand_in, &[&["--metrics", &metrics][..], args].concat()).await
}

/// Runs `bowline-stress` against `stand_in` with exactly `args` (and quiet), as [`run`].
async fn run_with(stand_in: &StandIn, args: &[&str]) -> (i32, Value) {
    run_stress(&stand_in.base, args).await.reported()
}

/// The checks of `report`.
fn checks(report: &Value) -> &[Value] {
    report["checks"].as_array().expect("checks")
}

/// The check called `name`.
fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    checks(report)
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("a check {name}: {report:#}"))
}

/// Passed on the original's wire: exit 0, checks that ran (and at least two did) all held,
/// every skipped one marked as not passed with a reason, no 5xx, and the memory reported
/// unmeasured because the stand-in has no metrics listener.
fn assert_passed_on_the_originals_wire(code: i32, report: &Value) {
    assert_eq!(report["wire"], "musubi", "{report:#}");
    assert_eq!(report["passed"], true, "{report:#}");
    assert_eq!(code, 0, "{report:#}");
    let ran: Vec<&Value> = checks(report)
        .iter()
        .filter(|c| c["coverage"] != "skipped")
        .collect();
    assert!(ran.len() >= 2, "checks ran: {report:#}");
    assert!(ran.iter().all(|c| c["passed"] == true), "{report:#}");
    for skipped in checks(report).iter().filter(|c| c["coverage"] == "skipped") {
        assert_eq!(skipped["passed"], false, "a skipped check never passes");
        assert!(skipped["limit"].as_str().is_some_and(|l| !l.is_empty()));
    }
    let statuses = report["statuses"].as_object().expect("statuses");
    assert!(
        statuses.keys().all(|code| !code.starts_with('5')),
        "{report:#}"
    );
    assert!(report["memory"].is_null(), "{report:#}");
    let notes = report["notes"].as_array().expect("notes");
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains("memory not measured"))),
        "{report:#}"
    );
}

#[tokio::test]
async fn mixed_writers_with_streams_run_on_the_originals_wire() {
    let app = stress_app().await;
    let stand_in = StandIn::start(&app.base, Fault::None).await;
    let (code, report) = run(
        &stand_in,
        &[
            "--wire",
            "musubi",
            "--users",
            "6",
            "--calendars",
            "3",
            "--writers",
            "12",
            "--duration",
            "3s",
            "--sse",
            "--seed",
            "8",
        ],
    )
    .await;
    assert_passed_on_the_originals_wire(code, &report);
    let ops: Vec<&str> = report["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .filter(|o| o["ok"].as_u64() > Some(0))
        .filter_map(|o| o["op"].as_str())
        .collect();
    for op in ["create", "update", "link", "attendance", "delete"] {
        assert!(ops.contains(&op), "{op} ran: {report:#}");
    }
    assert!(
        report["statuses"].get("409").is_none(),
        "no conflicts without revisions: {report:#}"
    );
    let frames = &report["broadcast"]["frames"];
    assert!(frames["received"].as_u64().expect("received") > 0);
    assert_eq!(frames["received"], frames["expected"], "{report:#}");
    for weakened in [
        "every member received every frame exactly once",
        "full reads equal the model",
        "delta reads (since before the run) equal the model",
        "every write and link answered with the title written",
    ] {
        let weakened = check(&report, weakened);
        assert_eq!(weakened["coverage"], "weakened", "{weakened:#}");
        assert_eq!(weakened["passed"], true, "{weakened:#}");
    }
    let revisions = check(&report, "no update lost (revisions)");
    assert_eq!(revisions["coverage"], "skipped", "{revisions:#}");
    assert_eq!(check(&report, "no stream was dropped")["coverage"], "exact");

    // The tool saw the original's wire: the stand-in took out what Bowline added, and the
    // tool sent no revision of its own.
    let stripped = &stand_in.stripped;
    assert!(Stripped::get(&stripped.answer_revisions) > 0);
    assert!(Stripped::get(&stripped.frame_revisions) > 0);
    assert!(
        Stripped::get(&stripped.deleted_ids) > 0,
        "deltas listed no deletion"
    );
    assert!(Stripped::get(&stripped.metrics_refused) > 0);
    assert_eq!(
        Stripped::get(&stripped.request_revisions),
        0,
        "updates send no revision on the original's wire"
    );
}

#[tokio::test]
async fn throughput_and_fanout_run_on_the_originals_wire_and_bowlines_needs_its_extras() {
    let app = stress_app().await;
    let stand_in = StandIn::start(&app.base, Fault::None).await;
    let musubi = ["--wire", "musubi"];
    let create = [
        "--scenario",
        "create",
        "--connections",
        "4",
        "--duration",
        "1s",
    ];
    let (code, report) = run(&stand_in, &[&musubi[..], &create[..]].concat()).await;
    assert_passed_on_the_originals_wire(code, &report);
    assert!(report["operations"][0]["ok"].as_u64().expect("ok") > 0);
    let listed = check(
        &report,
        "the full read lists exactly the acknowledged creates",
    );
    assert_eq!(listed["coverage"], "exact", "{report:#}");

    let list = [
        "--scenario",
        "list",
        "--connections",
        "4",
        "--events",
        "20",
        "--duration",
        "1s",
    ];
    let (code, report) = run(&stand_in, &[&musubi[..], &list[..]].concat()).await;
    assert_passed_on_the_originals_wire(code, &report);

    let fanout = [
        "--scenario",
        "fanout",
        "--users",
        "3",
        "--connections",
        "30",
        "--broadcasts",
        "5",
    ];
    let frames_before = Stripped::get(&stand_in.stripped.frame_revisions);
    let (code, report) = run(&stand_in, &[&musubi[..], &fanout[..]].concat()).await;
    assert_passed_on_the_originals_wire(code, &report);
    assert_eq!(
        report["broadcast"]["frames"]["received"],
        30 * 5,
        "{report:#}"
    );
    assert_eq!(
        report["broadcast"]["last_connection"]["count"], 5,
        "{report:#}"
    );
    // The 5 broadcasts, and the event that ends the setup phase on the streams.
    assert_eq!(
        Stripped::get(&stand_in.stripped.frame_revisions) - frames_before,
        30 * (5 + 1),
        "every frame lost its revision"
    );

    // Bowline's wire needs the extras: through the stand-in, its metrics listener is
    // missing (the run cannot start) and not a single create is acknowledged.
    let metrics = format!("{}/metrics", stand_in.base);
    let StressRun { code, output, .. } = run_stress(
        &stand_in.base,
        &[&fanout[..], &["--metrics", &metrics]].concat(),
    )
    .await;
    assert_eq!(
        code, 2,
        "the metrics listener is required on Bowline's wire: {output}"
    );
    assert!(output.contains("HTTP 404"), "{output}");
    let small_fanout = [
        "--scenario",
        "fanout",
        "--users",
        "3",
        "--connections",
        "3",
        "--broadcasts",
        "2",
    ];
    let (code, report) = run_with(&stand_in, &small_fanout).await;
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["wire"], "bowline", "{report:#}");
    assert_eq!(report["passed"], false, "{report:#}");
    assert_eq!(report["operations"][0]["failed"], 2, "{report:#}");
}

#[tokio::test]
async fn a_frame_lost_on_the_originals_wire_is_still_caught() {
    let app = stress_app().await;
    let stand_in = StandIn::start(&app.base, Fault::DropEventFrame(3)).await;
    let (code, report) = run(
        &stand_in,
        &[
            "--wire",
            "musubi",
            "--users",
            "3",
            "--calendars",
            "1",
            "--writers",
            "4",
            "--duration",
            "1s",
            "--sse",
            "--frame-wait",
            "1s",
            "--seed",
            "3",
        ],
    )
    .await;
    assert_eq!(Stripped::get(&stand_in.stripped.dropped_frames), 1);
    assert_eq!(code, 1, "a failed check is exit code 1: {report:#}");
    assert_eq!(report["passed"], false, "{report:#}");
    let frames = check(&report, "every member received every frame exactly once");
    assert_eq!(frames["passed"], false, "{report:#}");
    assert_eq!(frames["coverage"], "weakened", "{report:#}");
    let detail = frames["detail"].as_str().expect("detail");
    assert!(detail.starts_with("1 problems"), "{detail}");
    assert!(detail.contains("never arrived"), "{detail}");
    assert_eq!(report["broadcast"]["frames"]["missing"], 1, "{report:#}");
}
