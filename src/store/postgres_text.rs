//! A PostgreSQL statement with its values written into its text, so that it can travel in
//! one simple-protocol text with others (a write transaction's deferred writes and its
//! `COMMIT`, [`super::postgres_txn`]) instead of in a round trip of its own.
//!
//! Every value is written as a typed literal of the type sqlx binds it as (so the
//! statement means what it means with bound values), and no value is ever escaped: text
//! and JSON go between dollar quotes whose tag holds a random part and is checked absent
//! from the value, so nothing a client sends can end the literal; everything else is
//! written by this module from numbers, and bytes go as hex. A value it cannot write
//! exactly (a text holding NUL, a time finer than PostgreSQL's microsecond, a type it
//! does not know) makes the statement stay bound: [`inline`] answers `None`.

use std::fmt::Write as _;

use chrono::{Datelike, Timelike};
use sea_orm::Statement;
use sea_orm::sea_query::Value;

/// `statement`'s text with each placeholder (`$1`, `$2`, …) replaced by its value as a
/// typed literal, or `None` if a value cannot be written exactly or the text holds
/// something the scan does not take apart (a dollar quote, a comment).
pub(crate) fn inline(statement: &Statement) -> Option<String> {
    let values = statement
        .values
        .as_ref()
        .map_or(&[][..], |v| v.0.as_slice());
    let sql = statement.sql.as_str();
    let mut out = String::with_capacity(sql.len() + 32 * values.len());
    let mut chars = sql.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            // A string literal (`E'…'` takes backslash escapes) or a quoted identifier.
            '\'' | '"' => {
                let escapes = c == '\'' && takes_escapes(&sql[..at]);
                out.push(c);
                copy_quoted(&mut chars, &mut out, c, escapes)?;
            }
            '$' => {
                let mut n = 0usize;
                let mut digits = 0;
                while let Some((_, d)) = chars.peek().filter(|(_, d)| d.is_ascii_digit()) {
                    n = n.checked_mul(10)?.checked_add(d.to_digit(10)? as usize)?;
                    digits += 1;
                    chars.next();
                }
                if digits == 0 {
                    return None;
                }
                literal(&mut out, values.get(n.checked_sub(1)?)?)?;
            }
            '-' if chars.peek().is_some_and(|(_, n)| *n == '-') => return None,
            '/' if chars.peek().is_some_and(|(_, n)| *n == '*') => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// Copies the rest of a literal or identifier opened by `quote` (a doubled `quote` stands
/// for one; with `escapes`, a backslash takes the next character); `None` if it is not
/// closed.
fn copy_quoted(
    chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
    out: &mut String,
    quote: char,
    escapes: bool,
) -> Option<()> {
    loop {
        let (_, c) = chars.next()?;
        out.push(c);
        if c == '\\' && escapes {
            out.push(chars.next()?.1);
        } else if c == quote {
            if chars.peek().is_some_and(|(_, n)| *n == quote) {
                out.push(chars.next()?.1);
            } else {
                return Some(());
            }
        }
    }
}

/// Whether a string literal after `before` is an escape string: `E'…'`, the `E` not the
/// end of a longer word.
fn takes_escapes(before: &str) -> bool {
    let mut back = before.chars().rev();
    back.next().is_some_and(|p| p == 'E' || p == 'e')
        && !back.next().is_some_and(|p| p.is_alphanumeric() || p == '_')
}

/// `value` as a typed literal, as [`inline`] writes it; `None` if it cannot be written
/// exactly.
pub(crate) fn value_literal(value: &Value) -> Option<String> {
    let mut out = String::new();
    literal(&mut out, value)?;
    Some(out)
}

/// Writes `value` as a literal of the type sqlx binds it as; `None` if it cannot be written
/// exactly.
fn literal(out: &mut String, value: &Value) -> Option<()> {
    match value {
        Value::Bool(v) => typed(out, v.as_ref(), "bool", |out, b| {
            out.push_str(if *b { "true" } else { "false" });
            Some(())
        }),
        Value::SmallInt(v) => typed(out, v.as_ref(), "int2", quoted_display),
        Value::Int(v) => typed(out, v.as_ref(), "int4", quoted_display),
        Value::BigInt(v) => typed(out, v.as_ref(), "int8", quoted_display),
        Value::Float(v) => typed(out, v.as_ref(), "float4", quoted_display),
        Value::Double(v) => typed(out, v.as_ref(), "float8", quoted_display),
        Value::String(v) => typed(out, v.as_ref(), "text", |out, s| dollar_quoted(out, s)),
        Value::Json(v) => typed(out, v.as_ref(), "jsonb", |out, json| {
            dollar_quoted(out, &json.to_string())
        }),
        Value::Bytes(v) => typed(out, v.as_ref(), "bytea", |out, bytes| {
            out.push_str("decode('");
            for byte in bytes {
                let _ = write!(out, "{byte:02x}");
            }
            out.push_str("', 'hex')");
            Some(())
        }),
        Value::Uuid(v) => typed(out, v.as_ref(), "uuid", |out, id| {
            let _ = write!(out, "'{}'", id.hyphenated());
            Some(())
        }),
        Value::ChronoDateTimeUtc(v) => typed(out, v.as_ref(), "timestamptz", |out, at| {
            date_time(out, &at.naive_utc(), "+00")
        }),
        Value::ChronoDateTimeWithTimeZone(v) => typed(out, v.as_ref(), "timestamptz", |out, at| {
            date_time(out, &at.naive_utc(), "+00")
        }),
        Value::ChronoDateTime(v) => typed(out, v.as_ref(), "timestamp", |out, at| {
            date_time(out, at, "")
        }),
        Value::ChronoDate(v) => typed(out, v.as_ref(), "date", |out, day| {
            (1..=9999).contains(&day.year()).then(|| {
                let _ = write!(out, "'{}'", day.format("%Y-%m-%d"));
            })
        }),
        Value::ChronoTime(v) => typed(out, v.as_ref(), "time", |out, time| {
            micros_exact(time.nanosecond())?;
            let _ = write!(out, "'{}'", time.format("%H:%M:%S%.6f"));
            Some(())
        }),
        // Types sqlx binds in ways this module does not write (`"char"` for `i8`, unsigned
        // integers narrowed, enums, arrays, …): the statement stays bound.
        _ => None,
    }
}

/// `value` written by `write`, with `::kind` after it; `NULL::kind` for none.
fn typed<T>(
    out: &mut String,
    value: Option<&T>,
    kind: &str,
    write: impl FnOnce(&mut String, &T) -> Option<()>,
) -> Option<()> {
    out.push('(');
    match value {
        Some(value) => write(out, value)?,
        None => out.push_str("NULL"),
    }
    out.push_str("::");
    out.push_str(kind);
    out.push(')');
    Some(())
}

/// A number between single quotes (so that a negative one is one literal, and `NaN` and
/// `inf` are read as such).
fn quoted_display(out: &mut String, value: &impl std::fmt::Display) -> Option<()> {
    let _ = write!(out, "'{value}'");
    Some(())
}

/// A date and time to the microsecond, with `zone` after it; `None` outside the years
/// 1–9999 (written differently, and beyond what a client sends) or with a fraction finer
/// than a microsecond (which sqlx truncates and PostgreSQL's input would round).
fn date_time(out: &mut String, at: &chrono::NaiveDateTime, zone: &str) -> Option<()> {
    if !(1..=9999).contains(&at.year()) {
        return None;
    }
    micros_exact(at.nanosecond())?;
    let _ = write!(out, "'{}{zone}'", at.format("%Y-%m-%dT%H:%M:%S%.6f"));
    Some(())
}

/// `Some` if `nanos` is a whole number of microseconds (and not a leap second's).
fn micros_exact(nanos: u32) -> Option<()> {
    (nanos < 1_000_000_000 && nanos.is_multiple_of(1_000)).then_some(())
}

/// `text` between dollar quotes whose tag it does not contain; `None` if it holds NUL,
/// which PostgreSQL's text cannot hold (bound, it is refused with an error of its own).
fn dollar_quoted(out: &mut String, text: &str) -> Option<()> {
    if text.contains('\0') {
        return None;
    }
    let tag = loop {
        let tag = format!("$v{:016x}$", rand::random::<u64>());
        if !text.contains(&tag) {
            break tag;
        }
    };
    out.push_str(&tag);
    out.push_str(text);
    out.push_str(&tag);
    Some(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use chrono::{NaiveDate, TimeZone, Utc};
    use sea_orm::sea_query::{Alias, Expr, PostgresQueryBuilder, Query};
    use sea_orm::{DbBackend, Values};

    use super::*;

    fn statement(sql: &str, values: Vec<Value>) -> Statement {
        Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
    }

    /// The dollar-quoted content of `text`'s only literal.
    fn quoted(text: &str) -> (&str, &str) {
        let open = text.find('$').unwrap();
        let close = open + 1 + text[open + 1..].find('$').unwrap();
        let tag = &text[open..=close];
        let end = text[close + 1..].find(tag).unwrap() + close + 1;
        (tag, &text[close + 1..end])
    }

    #[test]
    fn values_are_typed_literals() {
        let at = Utc.with_ymd_and_hms(2026, 11, 30, 6, 5, 4).unwrap()
            + chrono::TimeDelta::microseconds(123_456);
        let id = uuid::Uuid::parse_str("0192f0c4-8e3a-7b3c-9d41-6f1e2a3b4c5d").unwrap();
        let text = inline(&statement(
            "SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9",
            vec![
                Value::Bool(Some(true)),
                Value::BigInt(Some(i64::MIN)),
                Value::Int(None),
                Value::Double(Some(f64::NAN)),
                Value::Uuid(Some(id)),
                Value::ChronoDateTimeUtc(Some(at)),
                Value::Bytes(Some(vec![0, 0xab, 0xff])),
                Value::ChronoDate(Some(NaiveDate::from_ymd_opt(2026, 2, 3).unwrap())),
                Value::SmallInt(Some(-3)),
            ],
        ))
        .unwrap();
        assert_eq!(
            text,
            "SELECT (true::bool), ('-9223372036854775808'::int8), (NULL::int4), ('NaN'::float8), \
             ('0192f0c4-8e3a-7b3c-9d41-6f1e2a3b4c5d'::uuid), \
             ('2026-11-30T06:05:04.123456+00'::timestamptz), (decode('00abff', 'hex')::bytea), \
             ('2026-02-03'::date), ('-3'::int2)"
        );
    }

    #[test]
    fn text_goes_between_tags_it_does_not_hold() {
        let nasty = "it's $$ $v$ \\' \u{1a} \"x\" ; COMMIT; --";
        let text = inline(&statement(
            "INSERT INTO t (a) VALUES ($1)",
            vec![Value::String(Some(nasty.into()))],
        ))
        .unwrap();
        assert!(text.starts_with("INSERT INTO t (a) VALUES (($v"));
        assert!(text.ends_with("::text))"));
        let (tag, content) = quoted(&text);
        assert_eq!(content, nasty);
        assert!(!nasty.contains(tag));
    }

    #[test]
    fn json_is_written_as_text_between_tags() {
        let json = serde_json::json!({"a": "b'$c$", "n": 1});
        let text = inline(&statement(
            "SELECT $1",
            vec![Value::Json(Some(Box::new(json.clone())))],
        ))
        .unwrap();
        assert!(text.ends_with("::jsonb)"));
        let (_, content) = quoted(&text);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(content).unwrap(),
            json
        );
    }

    #[test]
    fn values_it_cannot_write_exactly_keep_the_statement_bound() {
        for value in [
            Value::String(Some("a\0b".into())),
            Value::TinyInt(Some(1)),
            Value::BigUnsigned(Some(1)),
            Value::ChronoDateTimeUtc(Some(Utc.timestamp_opt(1_700_000_000, 1).single().unwrap())),
            Value::ChronoDate(Some(NaiveDate::from_ymd_opt(10_000, 1, 1).unwrap())),
        ] {
            assert_eq!(
                inline(&statement("SELECT $1", vec![value.clone()])),
                None,
                "{value:?}"
            );
        }
    }

    #[test]
    fn placeholders_in_literals_and_identifiers_stay() {
        let text = inline(&statement(
            r#"SELECT '$1', E'\'$1', "$1""", $1"#,
            vec![Value::Int(Some(7))],
        ))
        .unwrap();
        assert_eq!(text, r#"SELECT '$1', E'\'$1', "$1""", ('7'::int4)"#);
    }

    #[test]
    fn texts_it_does_not_take_apart_stay_bound() {
        for sql in [
            "SELECT $$x$$",
            "SELECT 1 -- $1",
            "SELECT /* $1 */ 1",
            "SELECT $2",
            "SELECT 'open",
        ] {
            assert_eq!(
                inline(&statement(sql, vec![Value::Int(Some(1))])),
                None,
                "{sql}"
            );
        }
    }

    #[test]
    fn a_built_statement_inlines() {
        let insert = Query::insert()
            .into_table(Alias::new("t"))
            .columns([Alias::new("a"), Alias::new("b")])
            .values_panic([Expr::val("x"), Expr::val(2i64)])
            .to_owned();
        let (sql, values) = insert.build(PostgresQueryBuilder);
        let text = inline(&Statement::from_sql_and_values(
            DbBackend::Postgres,
            sql,
            Values(values.0).0,
        ))
        .unwrap();
        assert!(
            text.starts_with(r#"INSERT INTO "t" ("a", "b") VALUES (($v"#),
            "{text}"
        );
        assert!(text.ends_with("::text), ('2'::int8))"), "{text}");
    }
}
