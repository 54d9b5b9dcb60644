//! Bowline's black-box test suite: one binary, one module per area. Every test starts its
//! own server on port 0 with its own database (see `helpers`), so tests run in parallel and
//! the whole suite runs on SQLite, or on PostgreSQL when `TEST_DATABASE_URL` is set.

// Test code states its expectations by panicking; the lint is for the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod actors;
mod attendance;
mod auth_email;
mod auth_id_tokens;
mod auth_mail;
mod auth_session_lifecycle;
mod auth_sessions;
mod auth_social;
mod avatars;
mod better_auth_client;
mod big_reads;
mod binary;
mod calendar_actors;
mod calendars;
mod change_mails;
mod concurrency;
mod conditional_reads;
mod connections;
mod delta;
mod event_batch_roles;
mod event_frames;
mod event_links;
mod event_permissions;
mod event_races;
mod event_read_cache;
mod event_updates;
mod events;
mod helpers;
mod home_governs;
mod html_pages;
mod ics;
mod ics_corpus;
mod ics_corpus_details;
mod ics_export;
mod ics_hostile;
mod invite_links;
mod invite_rules;
mod invite_send;
mod matrix;
mod metrics;
mod musubi_wire;
mod notifications;
mod origin_checks;
mod pages;
mod pages_default;
mod permissions;
mod pipeline;
mod pipeline_input;
mod profiles;
mod random_bodies;
mod recurrence_bounds;
mod reminders;
mod server;
mod settings;
mod sharing;
mod storage;
mod stored_values;
mod stream;
mod stream_credentials;
mod stress;
mod support;
