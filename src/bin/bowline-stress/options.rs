//! The command line of `bowline-stress`: which scenario to run against which server, with
//! how many users, calendars, writers and connections, for how long, and where to write
//! the figures. Defaults that depend on the scenario are resolved by the accessors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use serde::Serialize;

use super::wire::Wire;

/// `bowline-stress`: drives a running Bowline server the way real clients do and checks that
/// nothing was lost.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "bowline-stress",
    version,
    about = "Concurrent-edit stress tool and benchmark driver for a running Bowline server",
    long_about = "Concurrent-edit stress tool and benchmark driver for a running Bowline server.\n\n\
        Scenarios:\n  \
        mixed   (default) users, shared calendars and memberships, then --writers concurrent\n          \
        writers run --mix while (with --sse) every user holds a stream; verifies at the end\n          \
        that no acknowledged write, update or frame was lost or duplicated and no 5xx occurred\n  \
        create  POST /api/v1/events throughput over --connections keep-alive connections\n  \
        list    GET /api/v1/events returning --events events, over --connections connections\n  \
        fanout  --connections open streams over --users users of one calendar, then\n          \
        --broadcasts writes: latency to the last connection, memory per connection\n\n\
        --wire musubi runs every scenario against the original implementation's wire (no event\n\
        revision, no conflicts, metrics optional); the checks that need Bowline's extras are\n\
        weakened or skipped, and the report says which.\n\n\
        Several instances: --base http://a:7531 --base http://b:7531 (or one comma-separated\n\
        list) sets up through the first and spreads writers, readers and streams over all of\n\
        them round robin; every check then holds across instances (a stream on one receives\n\
        the frames of writes made through another). --metrics is the first instance's.\n\n\
        Exit code: 0 when every check passed, 1 when one failed, 2 when the run could not start.\n\
        Benchmark servers: start them with AUTH_RATE_LIMIT=false (sign-up is limited per address)."
)]
pub struct Options {
    /// Base URL of the server under test; give it several times (or comma-separated) for
    /// several instances of one server: setup goes through the first, writers, readers and
    /// streams are spread over all of them round robin.
    #[arg(
        long = "base",
        value_name = "URL",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:7531"
    )]
    pub bases: Vec<String>,
    /// What to run.
    #[arg(long, value_enum, default_value_t = Scenario::Mixed)]
    pub scenario: Scenario,
    /// The server's wire: Bowline's (with event revisions), or the original Musubi
    /// implementation's (no revision: checks that need one are weakened or skipped).
    #[arg(long, value_enum, default_value_t = Wire::Bowline)]
    pub wire: Wire,
    /// Users to sign up [default: mixed 50, create/list 1, fanout 10].
    #[arg(long)]
    pub users: Option<usize>,
    /// Shared calendars [default: mixed 5, others 1].
    #[arg(long)]
    pub calendars: Option<usize>,
    /// Concurrent writers (mixed).
    #[arg(long, default_value_t = 200)]
    pub writers: usize,
    /// How long the load runs (create, list, mixed), e.g. 30s, 2m.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Operation weights of the mixed writers.
    #[arg(
        long,
        default_value = "create=40,update=40,link=5,attendance=10,delete=5"
    )]
    pub mix: Mix,
    /// Every user holds an /api/stream connection; frames are checked and timed (mixed).
    #[arg(long)]
    pub sse: bool,
    /// HTTP connections (create, list) or open streams (fanout) [default: 16, fanout 1000].
    #[arg(long)]
    pub connections: Option<usize>,
    /// Events each read returns (list).
    #[arg(long, default_value_t = 100)]
    pub events: usize,
    /// Broadcasts to time (fanout).
    #[arg(long, default_value_t = 50)]
    pub broadcasts: usize,
    /// The server's metrics listener, to report its resident memory,
    /// e.g. http://127.0.0.1:9464/metrics (with several bases, the first base's instance).
    #[arg(long)]
    pub metrics: Option<String>,
    /// Also write the figures as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// How long to wait for outstanding frames once the writers stopped.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub frame_wait: Duration,
    /// Seed of the writers' random choices (default: random).
    #[arg(long)]
    pub seed: Option<u64>,
    /// No progress output while running.
    #[arg(long)]
    pub quiet: bool,
}

/// The scenarios, one per kind of figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    /// Concurrent mixed writers with verification.
    Mixed,
    /// `POST /api/v1/events` throughput.
    Create,
    /// `GET /api/v1/events` throughput.
    List,
    /// Stream fan-out: broadcast latency and memory per connection.
    Fanout,
}

impl Options {
    /// Options with every default, against `base` (what the smoke test starts from).
    pub fn new(base: &str) -> Self {
        Self::parse_from(["bowline-stress", "--base", base])
    }

    /// Users to sign up.
    pub fn users(&self) -> usize {
        self.users.unwrap_or(match self.scenario {
            Scenario::Mixed => 50,
            Scenario::Create | Scenario::List => 1,
            Scenario::Fanout => 10,
        })
    }

    /// Shared calendars.
    pub fn calendars(&self) -> usize {
        self.calendars.unwrap_or(match self.scenario {
            Scenario::Mixed => 5,
            _ => 1,
        })
    }

    /// HTTP connections (create, list) or streams (fanout).
    pub fn connections(&self) -> usize {
        self.connections.unwrap_or(match self.scenario {
            Scenario::Fanout => 1000,
            _ => 16,
        })
    }

    /// Refuses combinations that cannot run.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("--users", self.users()),
            ("--calendars", self.calendars()),
            ("--writers", self.writers),
            ("--connections", self.connections()),
            ("--broadcasts", self.broadcasts),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, value)| *value == 0) {
            return Err(format!("{name} must be at least 1"));
        }
        if self.mix.total() == 0 {
            return Err("--mix needs at least one positive weight".into());
        }
        if self.duration.is_zero() {
            return Err("--duration must be positive".into());
        }
        if self.bases.is_empty() {
            return Err("--base needs at least one URL".into());
        }
        if let Some(bad) = self
            .bases
            .iter()
            .find(|base| !base.starts_with("http://") && !base.starts_with("https://"))
        {
            return Err(format!(
                "--base must be http:// or https:// URLs, not `{bad}`"
            ));
        }
        Ok(())
    }
}

/// A mixed writer's operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// `POST /api/v1/events`.
    Create,
    /// `PUT /api/v1/events` (with the last seen revision on Bowline's wire).
    Update,
    /// `POST /api/v1/events/:id/link`.
    Link,
    /// `PUT /api/v1/events/:id/attendance`.
    Attendance,
    /// `DELETE /api/v1/events`.
    Delete,
    /// `GET /api/v1/events`.
    List,
}

impl Op {
    /// The name used in `--mix`, tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Link => "link",
            Self::Attendance => "attendance",
            Self::Delete => "delete",
            Self::List => "list",
        }
    }

    const WRITES: [Op; 5] = [
        Self::Create,
        Self::Update,
        Self::Link,
        Self::Attendance,
        Self::Delete,
    ];
}

/// Weights of the write operations (`create=40,update=40,...`); absent ones weigh 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix {
    weights: BTreeMap<Op, u32>,
}

impl Mix {
    /// The sum of the weights.
    pub fn total(&self) -> u32 {
        self.weights.values().sum()
    }

    /// The operation a draw `roll` in `0..total()` lands on.
    pub fn pick(&self, roll: u32) -> Op {
        let mut left = roll;
        for (op, weight) in &self.weights {
            if left < *weight {
                return *op;
            }
            left -= weight;
        }
        Op::Create
    }
}

impl FromStr for Mix {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut weights = BTreeMap::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}` is not name=weight"))?;
            let op = Op::WRITES
                .into_iter()
                .find(|op| op.name() == name.trim())
                .ok_or_else(|| {
                    format!("unknown operation `{name}` (create, update, link, attendance, delete)")
                })?;
            let weight: u32 = weight
                .trim()
                .parse()
                .map_err(|_| format!("weight of `{name}` is not a whole number"))?;
            weights.insert(op, weight);
        }
        Ok(Self { weights })
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_default_mix_picks_each_operation_by_its_weight() {
        let mix: Mix = "create=40,update=40,link=5,attendance=10,delete=5"
            .parse()
            .unwrap();
        assert_eq!(mix.total(), 100);
        let mut counts = BTreeMap::new();
        for roll in 0..100 {
            *counts.entry(mix.pick(roll)).or_insert(0) += 1;
        }
        assert_eq!(counts[&Op::Create], 40);
        assert_eq!(counts[&Op::Update], 40);
        assert_eq!(counts[&Op::Link], 5);
        assert_eq!(counts[&Op::Attendance], 10);
        assert_eq!(counts[&Op::Delete], 5);
    }

    #[test]
    fn a_mix_names_known_operations_with_whole_weights() {
        assert!("create=1,teleport=2".parse::<Mix>().is_err());
        assert!("create".parse::<Mix>().is_err());
        assert!("create=x".parse::<Mix>().is_err());
        let only: Mix = "update=3".parse().unwrap();
        assert_eq!(only.pick(2), Op::Update);
    }

    #[test]
    fn defaults_depend_on_the_scenario() {
        let mixed = Options::new("http://127.0.0.1:1");
        assert_eq!((mixed.users(), mixed.calendars()), (50, 5));
        assert_eq!(mixed.duration, Duration::from_secs(30));
        let fanout = Options::parse_from(["x", "--scenario", "fanout"]);
        assert_eq!((fanout.users(), fanout.connections()), (10, 1000));
        let create = Options::parse_from(["x", "--scenario", "create", "--duration", "2m"]);
        assert_eq!(create.connections(), 16);
        assert_eq!(create.duration, Duration::from_secs(120));
        assert!(create.validate().is_ok());
        let zero = Options::parse_from(["x", "--writers", "0"]);
        assert!(zero.validate().is_err());
        assert_eq!(mixed.wire, Wire::Bowline);
        let original = Options::parse_from(["x", "--wire", "musubi"]);
        assert_eq!(original.wire, Wire::Musubi);
    }

    #[test]
    fn bases_are_given_several_times_or_comma_separated_each_an_http_url() {
        let one = Options::parse_from(["x"]);
        assert_eq!(one.bases, vec!["http://127.0.0.1:7531"]);
        let several = Options::parse_from([
            "x",
            "--base",
            "http://a:7531,https://b.example",
            "--base",
            "http://c:7531",
        ]);
        assert_eq!(
            several.bases,
            vec!["http://a:7531", "https://b.example", "http://c:7531"]
        );
        assert!(several.validate().is_ok());
        let twice = Options::parse_from(["x", "--base", "http://a:1", "--base", "http://a:1"]);
        assert_eq!(twice.bases.len(), 2, "one instance may be named twice");
        assert!(twice.validate().is_ok());
        let bad = Options::parse_from(["x", "--base", "http://a:1,ftp://b"]);
        let err = bad.validate().unwrap_err();
        assert!(err.contains("`ftp://b`"), "{err}");
        let empty = Options::parse_from(["x", "--base", "http://a:1,"]);
        assert!(empty.validate().is_err(), "an empty URL is refused");
    }
}
