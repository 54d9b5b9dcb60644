//! Progress while a run goes: on a terminal a live line rewritten every second, otherwise
//! (CI, a pipe) a plain line every five seconds, both on stderr so stdout stays the report.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use super::stats::Live;

/// Prints notes and the progress line, unless quiet.
#[derive(Debug, Clone, Copy)]
pub struct Console {
    quiet: bool,
    live: bool,
}

impl Console {
    /// A console on stderr; `quiet` silences it.
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            live: std::io::stderr().is_terminal(),
        }
    }

    /// One line about what the run is doing.
    pub fn note(&self, text: &str) {
        if !self.quiet {
            eprintln!("bowline-stress: {text}");
        }
    }

    /// Starts the progress line of a load phase called `label` meant to last `planned`.
    pub fn progress(&self, label: &str, live: Arc<Live>, planned: Option<Duration>) -> Progress {
        if self.quiet {
            return Progress {
                task: None,
                live: false,
            };
        }
        let label = label.to_owned();
        let terminal = self.live;
        let every = if terminal {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(5)
        };
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let mut ticker = tokio::time::interval(every);
            ticker.tick().await;
            let mut last = (0, started);
            loop {
                ticker.tick().await;
                let now = Instant::now();
                let requests = live.requests.load(Ordering::Relaxed);
                let rate = (requests - last.0) as f64
                    / now
                        .saturating_duration_since(last.1)
                        .as_secs_f64()
                        .max(f64::EPSILON);
                last = (requests, now);
                let planned =
                    planned.map_or(String::new(), |p| format!("/{:.0}s", p.as_secs_f64()));
                let line = format!(
                    "{label} {:5.1}s{planned}  {requests} answers  {rate:8.0}/s  409 {}  failed {}  5xx {}  frames {}",
                    now.saturating_duration_since(started).as_secs_f64(),
                    live.conflicts.load(Ordering::Relaxed),
                    live.failures.load(Ordering::Relaxed),
                    live.server_errors.load(Ordering::Relaxed),
                    live.frames.load(Ordering::Relaxed),
                );
                if terminal {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[2K{line}");
                    let _ = err.flush();
                } else {
                    eprintln!("{line}");
                }
            }
        });
        Progress {
            task: Some(task),
            live: terminal,
        }
    }
}

/// A running progress line.
#[derive(Debug)]
pub struct Progress {
    task: Option<JoinHandle<()>>,
    live: bool,
}

impl Progress {
    /// Stops it (and clears a live line).
    pub fn stop(self) {
        if let Some(task) = &self.task {
            task.abort();
            if self.live {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K");
                let _ = err.flush();
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}
