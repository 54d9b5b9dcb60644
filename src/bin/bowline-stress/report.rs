//! The figures of a run: a readable summary table for people and the same figures as JSON
//! (`--json`) for machines, with the wire the run spoke, the checks it weakened or skipped
//! for that wire and what it could not measure.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use super::options::{Op, Scenario};
use super::server_metrics::WriteTotals;
use super::stats::{Recorder, Summary};
use super::verify::{Check, Coverage, FrameCounts};
use super::wire::Wire;

/// Everything a run measured and checked.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The scenario.
    pub scenario: Scenario,
    /// The server's wire.
    pub wire: Wire,
    /// The server's bases (one per instance) and what went through each.
    pub bases: Vec<BaseFigures>,
    /// When the load started (UTC).
    pub started_at: String,
    /// How long the load ran, in seconds.
    pub seconds: f64,
    /// Users signed up.
    pub users: usize,
    /// Calendars shared.
    pub calendars: usize,
    /// Concurrent writers (mixed) or HTTP connections (create, list).
    pub workers: usize,
    /// Open streams during the load.
    pub streams: usize,
    /// Per operation.
    pub operations: Vec<OperationFigures>,
    /// Frames and their latency, when streams were open.
    pub broadcast: Option<BroadcastFigures>,
    /// The server's resident memory, when `--metrics` was given.
    pub memory: Option<MemoryFigures>,
    /// How long the server's writes held the database, when `--metrics` was given and
    /// the server exports it.
    pub writes: Option<WriteFigures>,
    /// Answers by status (`"0"`: transport error).
    pub statuses: BTreeMap<String, u64>,
    /// The checks.
    pub checks: Vec<Check>,
    /// What the run could not measure on this wire (the server's memory...).
    pub notes: Vec<String>,
    /// Whether every check that ran passed (a skipped check never counts as passed).
    pub passed: bool,
}

/// What went through one base of a run (setup, the final reads and the barriers went
/// through the first and are not counted).
#[derive(Debug, Clone, Default, Serialize)]
pub struct BaseFigures {
    /// Its URL.
    pub base: String,
    /// Writers (mixed), connections (create, list) or broadcasts (fanout) sent through it.
    pub workers: usize,
    /// Answers it gave to them.
    pub answers: u64,
    /// Streams open on it.
    pub streams: usize,
    /// Frames its streams received.
    pub frames: u64,
}

impl BaseFigures {
    /// One row per base of `urls`: the `workers` (each its base's position and its answers)
    /// and the `streams` (each its base's position and its frames).
    pub fn rows(
        urls: Vec<String>,
        workers: impl IntoIterator<Item = (usize, u64)>,
        streams: impl IntoIterator<Item = (usize, u64)>,
    ) -> Vec<Self> {
        let mut rows: Vec<Self> = urls
            .into_iter()
            .map(|base| Self {
                base,
                ..Self::default()
            })
            .collect();
        for (base, answers) in workers {
            if let Some(row) = rows.get_mut(base) {
                row.workers += 1;
                row.answers += answers;
            }
        }
        for (base, frames) in streams {
            if let Some(row) = rows.get_mut(base) {
                row.streams += 1;
                row.frames += frames;
            }
        }
        rows
    }
}

/// One operation's figures.
#[derive(Debug, Clone, Serialize)]
pub struct OperationFigures {
    /// Which.
    pub op: Op,
    /// Applied.
    pub ok: u64,
    /// `409`s (acknowledged, not applied, retried).
    pub conflicts: u64,
    /// Failed.
    pub failed: u64,
    /// Applied per second.
    pub per_second: f64,
    /// Latency of every answer.
    pub latency: Summary,
}

/// Stream figures.
#[derive(Debug, Clone, Serialize)]
pub struct BroadcastFigures {
    /// Open connections.
    pub connections: usize,
    /// Frame counts.
    pub frames: FrameCounts,
    /// From a write's answer to a frame's arrival, over every frame (0 for a frame that
    /// arrived before the answer).
    pub latency: Summary,
    /// From a write's request to a frame's arrival, over every frame.
    pub latency_from_request: Summary,
    /// From a write's answer to the arrival at the last connection, over the broadcasts
    /// (fanout).
    pub last_connection: Option<Summary>,
    /// From a write's request to the arrival at the last connection (fanout).
    pub last_connection_from_request: Option<Summary>,
}

/// The server's resident memory (`svc_process_resident_memory_bytes`).
#[derive(Debug, Clone, Serialize)]
pub struct MemoryFigures {
    /// Before the load (after setup).
    pub baseline_mib: f64,
    /// Highest seen during the load.
    pub peak_mib: f64,
    /// After the load.
    pub end_mib: f64,
    /// Growth per open stream (fanout).
    pub per_stream_kib: Option<f64>,
}

/// How long the server's write transactions held their database connection over a run
/// (`svc_db_write_hold_seconds`), and how many its SQLite commits carried.
#[derive(Debug, Clone, Serialize)]
pub struct WriteFigures {
    /// Seconds held per second of the load: on SQLite, the share of the time its one writer
    /// was busy (at 1 writes queue); on PostgreSQL, the mean count of write transactions open.
    pub held_per_second: f64,
    /// The mean hold of one write transaction.
    pub hold_ms: f64,
    /// Write transactions per commit (SQLite's shared commits; `None` on PostgreSQL).
    pub writes_per_commit: Option<f64>,
}

impl WriteFigures {
    /// The figures of the load between readings `before` and `after`, `load` long.
    pub fn between(before: WriteTotals, after: WriteTotals, load: Duration) -> Option<Self> {
        let writes = after.writes - before.writes;
        if writes <= 0.0 {
            return None;
        }
        let held = after.held_seconds - before.held_seconds;
        let commits = after.commits - before.commits;
        Some(Self {
            held_per_second: held / load.as_secs_f64().max(f64::EPSILON),
            hold_ms: held * 1000.0 / writes,
            writes_per_commit: (commits > 0.0)
                .then(|| (after.committed - before.committed) / commits),
        })
    }
}

impl Report {
    /// The operation rows of `record` over `elapsed`.
    pub fn operations(record: &Recorder, elapsed: Duration) -> Vec<OperationFigures> {
        let seconds = elapsed.as_secs_f64().max(f64::EPSILON);
        record
            .ops
            .iter()
            .map(|(op, stats)| OperationFigures {
                op: *op,
                ok: stats.ok,
                conflicts: stats.conflicts,
                failed: stats.failed,
                per_second: stats.ok as f64 / seconds,
                latency: stats.latency.summary(),
            })
            .collect()
    }

    /// The statuses of `record`, keyed by their text.
    pub fn statuses(record: &Recorder) -> BTreeMap<String, u64> {
        record
            .statuses
            .iter()
            .map(|(code, count)| (code.to_string(), *count))
            .collect()
    }

    /// The figures as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|err| format!("{{\"error\":\"{err}\"}}"))
    }

    /// The summary table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let urls: Vec<&str> = self.bases.iter().map(|b| b.base.as_str()).collect();
        let _ = writeln!(
            out,
            "bowline-stress {} against {} ({} wire): {:.1} s, {} users, {} calendars, {} {}, {} streams",
            self.scenario_name(),
            urls.join(", "),
            self.wire.name(),
            self.seconds,
            self.users,
            self.calendars,
            self.workers,
            if self.scenario == Scenario::Mixed {
                "writers"
            } else {
                "connections"
            },
            self.streams,
        );
        if self.bases.len() > 1 {
            let workers = match self.scenario {
                Scenario::Mixed => "writers",
                Scenario::Fanout => "broadcasts",
                Scenario::Create | Scenario::List => "connections",
            };
            for (n, row) in self.bases.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "base {:<6}{}: {} {workers}, {} answers, {} streams, {} frames",
                    n + 1,
                    row.base,
                    row.workers,
                    row.answers,
                    row.streams,
                    row.frames
                );
            }
        }
        if !self.operations.is_empty() {
            let _ = writeln!(
                out,
                "\n{:<11}{:>9}{:>7}{:>8}{:>10}{:>9}{:>9}{:>9}{:>9}",
                "operation", "ok", "409", "failed", "per s", "p50 ms", "p90 ms", "p99 ms", "max ms"
            );
            for row in &self.operations {
                let l = &row.latency;
                let _ = writeln!(
                    out,
                    "{:<11}{:>9}{:>7}{:>8}{:>10.1}{:>9.2}{:>9.2}{:>9.2}{:>9.2}",
                    row.op.name(),
                    row.ok,
                    row.conflicts,
                    row.failed,
                    row.per_second,
                    l.p50_ms,
                    l.p90_ms,
                    l.p99_ms,
                    l.max_ms
                );
            }
            if self.operations.len() > 1 {
                let ok: u64 = self.operations.iter().map(|r| r.ok).sum();
                let per_second: f64 = self.operations.iter().map(|r| r.per_second).sum();
                let _ = writeln!(out, "{:<11}{ok:>9}{:>25.1}", "all", per_second);
            }
        }
        if let Some(b) = &self.broadcast {
            let _ = writeln!(
                out,
                "\nframes     {} received on {} connections ({} expected, {} before their write's answer)",
                b.frames.received, b.connections, b.frames.expected, b.frames.before_answer,
            );
            let line = |what: &str, l: &Summary| {
                format!(
                    "{what:<34} p50 {:>8.2} ms  p99 {:>8.2} ms  max {:>8.2} ms\n",
                    l.p50_ms, l.p99_ms, l.max_ms
                )
            };
            out.push_str(&line("broadcast  answer → frame", &b.latency));
            out.push_str(&line("           request → frame", &b.latency_from_request));
            if let Some(last) = &b.last_connection {
                let title = format!("last of {} answer → frame", b.connections);
                out.push_str(&line(&title, last));
            }
            if let Some(last) = &b.last_connection_from_request {
                out.push_str(&line("           request → frame", last));
            }
        }
        if let Some(m) = &self.memory {
            let _ = write!(
                out,
                "\nmemory     server resident: {:.1} MiB before, {:.1} MiB peak, {:.1} MiB after",
                m.baseline_mib, m.peak_mib, m.end_mib
            );
            if let Some(per) = m.per_stream_kib {
                let _ = write!(out, "; {per:.1} KiB per open stream");
            }
            out.push('\n');
        }
        if let Some(w) = &self.writes {
            let _ = write!(
                out,
                "database   writes held it {:.2} s per second, {:.2} ms each",
                w.held_per_second, w.hold_ms
            );
            if let Some(per) = w.writes_per_commit {
                let _ = write!(out, "; {per:.1} writes per commit");
            }
            out.push('\n');
        }
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(code, n)| {
                let code = if code == "0" { "transport error" } else { code };
                format!("{code} ×{n}")
            })
            .collect();
        let _ = writeln!(out, "answers    {}", statuses.join(", "));
        for note in &self.notes {
            let _ = writeln!(out, "note       {note}");
        }
        let _ = writeln!(out, "\nchecks");
        for check in &self.checks {
            let mark = match (check.coverage, check.passed) {
                (Coverage::Skipped, _) => "SKIP",
                (_, true) => "ok  ",
                (_, false) => "FAIL",
            };
            let _ = writeln!(out, "  {mark}  {}: {}", check.name, check.detail);
            if let Some(limit) = &check.limit {
                let how = if check.coverage == Coverage::Skipped {
                    "skipped"
                } else {
                    "weakened"
                };
                let _ = writeln!(
                    out,
                    "        {how} on the {} wire: {limit}",
                    self.wire.name()
                );
            }
        }
        let partial = self
            .checks
            .iter()
            .filter(|c| c.coverage != Coverage::Exact)
            .count();
        let _ = writeln!(
            out,
            "\nresult: {}{}",
            if self.passed { "PASSED" } else { "FAILED" },
            if partial > 0 {
                format!(" ({partial} checks weakened or skipped on this wire)")
            } else {
                String::new()
            }
        );
        out
    }

    fn scenario_name(&self) -> &'static str {
        match self.scenario {
            Scenario::Mixed => "mixed",
            Scenario::Create => "create",
            Scenario::List => "list",
            Scenario::Fanout => "fanout",
        }
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_every_figure_and_the_verdict() {
        let summary = Summary {
            count: 10,
            p50_ms: 1.5,
            p90_ms: 2.0,
            p99_ms: 3.25,
            max_ms: 9.0,
        };
        let report = Report {
            scenario: Scenario::Mixed,
            wire: Wire::Bowline,
            bases: BaseFigures::rows(
                vec![
                    "http://127.0.0.1:7531".into(),
                    "http://127.0.0.1:7532".into(),
                ],
                [(0, 6), (1, 4), (0, 2)],
                [(1, 30)],
            ),
            started_at: "2026-11-22T12:00:00.000Z".into(),
            seconds: 2.0,
            users: 3,
            calendars: 2,
            workers: 4,
            streams: 3,
            operations: vec![OperationFigures {
                op: Op::Create,
                ok: 10,
                conflicts: 0,
                failed: 0,
                per_second: 5.0,
                latency: summary,
            }],
            broadcast: Some(BroadcastFigures {
                connections: 3,
                frames: FrameCounts::default(),
                latency: summary,
                latency_from_request: summary,
                last_connection: None,
                last_connection_from_request: None,
            }),
            memory: Some(MemoryFigures {
                baseline_mib: 10.0,
                peak_mib: 12.0,
                end_mib: 11.0,
                per_stream_kib: None,
            }),
            writes: WriteFigures::between(
                WriteTotals {
                    held_seconds: 1.0,
                    writes: 100.0,
                    committed: 100.0,
                    commits: 50.0,
                },
                WriteTotals {
                    held_seconds: 2.6,
                    writes: 1100.0,
                    committed: 1100.0,
                    commits: 450.0,
                },
                Duration::from_secs(2),
            ),
            statuses: BTreeMap::from([("201".into(), 10)]),
            checks: vec![Check {
                name: "no 5xx answers".into(),
                passed: true,
                detail: "0 of 10".into(),
                coverage: Coverage::Exact,
                limit: None,
            }],
            notes: Vec::new(),
            passed: true,
        };
        let table = report.table();
        assert!(table.contains("create"), "{table}");
        assert!(table.contains("3.25"), "{table}");
        assert!(table.contains("12.0 MiB peak"), "{table}");
        assert!(
            table.contains(
                "database   writes held it 0.80 s per second, 1.60 ms each; 2.5 writes per commit"
            ),
            "{table}"
        );
        assert!(table.contains("result: PASSED"), "{table}");
        assert!(
            table.contains("against http://127.0.0.1:7531, http://127.0.0.1:7532"),
            "{table}"
        );
        assert!(
            table.contains(
                "base 1     http://127.0.0.1:7531: 2 writers, 8 answers, 0 streams, 0 frames"
            ),
            "{table}"
        );
        assert!(
            table.contains(
                "base 2     http://127.0.0.1:7532: 1 writers, 4 answers, 1 streams, 30 frames"
            ),
            "{table}"
        );
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["bases"][1]["base"], "http://127.0.0.1:7532");
        assert_eq!(json["bases"][1]["frames"], 30);
        assert_eq!(json["operations"][0]["op"], "create");
        assert_eq!(json["operations"][0]["latency"]["p99_ms"], 3.25);
        assert_eq!(json["scenario"], "mixed");
        assert_eq!(json["wire"], "bowline");
        assert_eq!(json["checks"][0]["coverage"], "exact");
    }

    #[test]
    fn skipped_and_weakened_checks_say_so_and_a_skipped_one_never_passes() {
        use crate::verify::{Problems, all_passed};
        let exact = Check::from_problems("exact", &Problems::default(), "fine".into());
        let weakened = exact.clone().weakened("no revision");
        let skipped = Check::skipped("revisions", "no revision on this wire");
        assert!(!skipped.passed);
        assert!(all_passed(&[weakened.clone(), skipped.clone()]));
        assert!(!all_passed(std::slice::from_ref(&skipped)), "nothing ran");
        let report = Report {
            scenario: Scenario::Mixed,
            wire: Wire::Musubi,
            bases: BaseFigures::rows(vec!["http://127.0.0.1:7531".into()], [], []),
            started_at: "2026-11-22T12:00:00.000Z".into(),
            seconds: 1.0,
            users: 1,
            calendars: 1,
            workers: 1,
            streams: 0,
            operations: Vec::new(),
            broadcast: None,
            memory: None,
            writes: None,
            statuses: BTreeMap::new(),
            checks: vec![exact, weakened, skipped],
            notes: vec!["server memory not measured".into()],
            passed: true,
        };
        let table = report.table();
        assert!(table.contains("musubi wire"), "{table}");
        assert!(table.contains("SKIP  revisions"), "{table}");
        assert!(
            table.contains("skipped on the musubi wire: no revision on this wire"),
            "{table}"
        );
        assert!(
            table.contains("weakened on the musubi wire: no revision"),
            "{table}"
        );
        assert!(
            table.contains("note       server memory not measured"),
            "{table}"
        );
        assert!(table.contains("2 checks weakened or skipped"), "{table}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["checks"][2]["coverage"], "skipped");
        assert_eq!(json["checks"][2]["passed"], false);
    }
}
