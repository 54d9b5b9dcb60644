//! Logging: one JSON object per line.
//!
//! [`JsonLayer`] flattens the fields of every enclosing span into each event, so a line
//! logged anywhere inside a request (including inside an actor, through ractor's span
//! propagation) carries that request's `requestId` and, once known, `userId`. Values of keys
//! that look like credentials are replaced by `[REDACTED]` as a last line of defence; code
//! never logs bodies, cookies, passwords or tokens in the first place.

use std::fmt;
use std::io::Write;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber, span};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use crate::config::LogLevel;

/// Installs the process-wide JSON logger on stdout (the one piece of global state a server
/// process has; tests run without it unless `TEST_LOG` is set). Also routes panics through it.
pub fn init(level: LogLevel) {
    let filter = Targets::new()
        .with_default(level_filter(level))
        // Connection resets (an SSE client going away) are not server errors.
        .with_target("hyper", LevelFilter::OFF)
        .with_target("sqlx", LevelFilter::WARN);
    let installed = Registry::default()
        .with(JsonLayer::new(std::io::stdout).with_filter(filter))
        .try_init()
        .is_ok();
    if installed {
        std::panic::set_hook(Box::new(|info| {
            let location = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            tracing::error!(panic = %panic_text(info), location, "panic");
        }));
    }
}

fn panic_text(info: &std::panic::PanicHookInfo<'_>) -> String {
    if let Some(text) = info.payload().downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = info.payload().downcast_ref::<String>() {
        text.clone()
    } else {
        "(non-text panic payload)".to_owned()
    }
}

/// The `tracing` filter for a `LOG_LEVEL`.
pub fn level_filter(level: LogLevel) -> LevelFilter {
    match level {
        LogLevel::Debug => LevelFilter::DEBUG,
        LogLevel::Info => LevelFilter::INFO,
        LogLevel::Warn => LevelFilter::WARN,
        LogLevel::Error => LevelFilter::ERROR,
        LogLevel::Silent => LevelFilter::OFF,
    }
}

/// A `tracing` layer writing each event as one JSON line to `W`.
pub struct JsonLayer<W> {
    make_writer: W,
}

impl<W> JsonLayer<W> {
    /// A layer writing to `make_writer` (e.g. `std::io::stdout`).
    pub fn new(make_writer: W) -> Self {
        Self { make_writer }
    }
}

/// Fields recorded on a span, kept in the span's extensions.
struct SpanFields(Map<String, Value>);

impl<S, W> Layer<S> for JsonLayer<W>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + 'static,
{
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        let mut fields = JsonVisitor(Map::new());
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields(fields.0));
        }
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            let mut extensions = span.extensions_mut();
            if let Some(SpanFields(fields)) = extensions.get_mut::<SpanFields>() {
                let mut visitor = JsonVisitor(std::mem::take(fields));
                values.record(&mut visitor);
                *fields = visitor.0;
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = JsonVisitor(Map::new());
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(SpanFields(span_fields)) = span.extensions().get::<SpanFields>() {
                    fields
                        .0
                        .extend(span_fields.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
            }
        }
        event.record(&mut fields);
        let mut fields = fields.0;
        let message = fields.remove("message").unwrap_or(Value::Null);

        let mut line = Map::new();
        line.insert(
            "timestamp".into(),
            crate::domain::time::format_timestamp(chrono::Utc::now()).into(),
        );
        line.insert("level".into(), event.metadata().level().as_str().into());
        line.insert("message".into(), message);
        line.append(&mut fields);
        line.insert("target".into(), event.metadata().target().into());

        let Ok(mut bytes) = serde_json::to_vec(&line) else {
            return;
        };
        bytes.push(b'\n');
        // A failed write to stdout cannot be reported anywhere better; drop the line.
        let _ = self.make_writer.make_writer().write_all(&bytes);
    }
}

/// Collects `tracing` fields into a JSON map, redacting credential-like keys.
struct JsonVisitor(Map<String, Value>);

impl JsonVisitor {
    fn insert(&mut self, field: &Field, value: Value) {
        let name = field.name();
        let value = if is_sensitive(name) {
            Value::from("[REDACTED]")
        } else {
            value
        };
        self.0.insert(name.to_owned(), value);
    }
}

/// Keys whose values must never be written, whatever a caller passes.
fn is_sensitive(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "authorization",
        "cookie",
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
    ]
    .iter()
    .any(|word| key.contains(word))
}

impl Visit for JsonVisitor {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.insert(field, value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.insert(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.insert(field, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.insert(field, value.into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.insert(field, value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        let mut text = value.to_string();
        let mut source = value.source();
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        self.insert(field, text.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.insert(field, format!("{value:?}").into());
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::ErrorKind::Other)?
                .extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;

        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    fn lines(captured: &Captured) -> Vec<Value> {
        let bytes = captured.0.lock().expect("lock").clone();
        String::from_utf8(bytes)
            .expect("utf8")
            .lines()
            .map(|line| serde_json::from_str(line).expect("each line is JSON"))
            .collect()
    }

    #[test]
    fn events_carry_span_fields_and_redact_secrets() {
        let captured = Captured::default();
        let subscriber = Registry::default().with(JsonLayer::new(captured.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let span =
                tracing::info_span!("request", requestId = "abc", userId = tracing::field::Empty);
            let _entered = span.enter();
            span.record("userId", "u1");
            tracing::warn!(
                password = "hunter2",
                authorization = "Bearer x",
                status = 401,
                "rejected"
            );
        });
        let lines = lines(&captured);
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        assert_eq!(line["message"], "rejected");
        assert_eq!(line["level"], "WARN");
        assert_eq!(line["requestId"], "abc");
        assert_eq!(line["userId"], "u1");
        assert_eq!(line["status"], 401);
        assert_eq!(line["password"], "[REDACTED]");
        assert_eq!(line["authorization"], "[REDACTED]");
    }
}
