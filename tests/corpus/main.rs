//! The iCalendar corpus suite: 61 real-world `.ics` files from other projects' fixtures,
//! imported over HTTP, each outcome held to what Bowline promises for it. The corpus is not
//! part of this repository, so the suite is not part of `cargo test`'s default run: it runs
//! with the corpus's directory given explicitly,
//!
//! ```sh
//! ICS_CORPUS_DIR=../shared/ics-corpus cargo test --test ics_corpus
//! ```
//!
//! (`.ci/run` does so), and fails, saying what is missing, when asked to run without it.
//! The default suite covers the importer's hostile input with fixtures of its own
//! (`tests/fixtures/ics`, `tests/api/ics_hostile.rs`). It shares the api suite's helpers.

// Test code states its expectations by panicking; the lint is for the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The api suite's helpers, of which this suite uses a few.
#![allow(dead_code, unused_imports)]

#[path = "../api/helpers/mod.rs"]
mod helpers;
mod ics_corpus;
mod ics_corpus_details;
#[path = "../api/support/mod.rs"]
mod support;
