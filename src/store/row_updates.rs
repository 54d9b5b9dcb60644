//! Updates of single rows by key, deferred in a PostgreSQL write transaction and written
//! as one statement for each run of updates of the same shape (table, key and columns set):
//! `UPDATE … FROM (VALUES …)`. An edit batch changes a row of `events` for each of its
//! edits; as one statement PostgreSQL parses, plans and runs the statement triggers once
//! for the run instead of once per row (12 rows: 1.6 ms against 2.7, FIGURES.md).
//!
//! The runs go after the other writes deferred with them ([`super::postgres_txn`]), so an
//! update deferred this way must be one that no other deferred write of the transaction
//! reads or depends on; they keep their order among themselves (a row updated twice is in
//! two runs, in order).

use std::fmt::Write as _;

use sea_orm::sea_query::Value;

/// An update of one row: the columns set and their values, found by its key.
#[derive(Debug, Clone)]
pub struct RowUpdate {
    /// The table.
    pub table: &'static str,
    /// The key column and the row's key.
    pub key: (&'static str, Value),
    /// The columns set, with their new values.
    pub columns: Vec<(&'static str, Value)>,
}

impl RowUpdate {
    /// Written out: `None` if a value cannot be written exactly as a literal
    /// ([`super::postgres_text::value_literal`]).
    pub(crate) fn written(&self) -> Option<WrittenRow> {
        let key = super::postgres_text::value_literal(&self.key.1)?;
        let literals = self
            .columns
            .iter()
            .map(|(_, value)| super::postgres_text::value_literal(value))
            .collect::<Option<Vec<_>>>()?;
        Some(WrittenRow {
            shape: Shape {
                table: self.table,
                key: self.key.0,
                columns: self.columns.iter().map(|(name, _)| *name).collect(),
            },
            key: (self.key.1.clone(), key),
            literals,
        })
    }
}

/// A [`RowUpdate`] written out as literals.
#[derive(Debug)]
pub(crate) struct WrittenRow {
    shape: Shape,
    /// The key, and as a literal (a text's literal differs from call to call: its dollar
    /// quote's tag is random).
    key: (Value, String),
    literals: Vec<String>,
}

impl WrittenRow {
    /// About its length in text.
    pub(crate) fn len(&self) -> usize {
        self.key.1.len() + self.literals.iter().map(|l| l.len() + 2).sum::<usize>()
    }
}

/// What a run's rows share.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    table: &'static str,
    key: &'static str,
    columns: Vec<&'static str>,
}

/// Rows updated by the same statement: one shape, each key once.
#[derive(Debug)]
struct Run {
    shape: Shape,
    /// Each row's key and values, in the shape's column order.
    rows: Vec<((Value, String), Vec<String>)>,
}

/// The runs of row updates waiting, in order.
#[derive(Debug, Default)]
pub(crate) struct RowRuns {
    runs: Vec<Run>,
}

impl RowRuns {
    /// Adds `row` to the last run if it has the same shape and not the same key, or else
    /// as a new run after it.
    pub(crate) fn push(&mut self, row: WrittenRow) {
        if let Some(last) = self.runs.last_mut()
            && last.shape == row.shape
            && !last.rows.iter().any(|(key, _)| key.0 == row.key.0)
        {
            last.rows.push((row.key, row.literals));
            return;
        }
        self.runs.push(Run {
            shape: row.shape,
            rows: vec![(row.key, row.literals)],
        });
    }

    /// How many statements [`Self::take_text`] writes.
    pub(crate) fn statements(&self) -> usize {
        self.runs.len()
    }

    /// Whether nothing waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Drops what waits.
    pub(crate) fn clear(&mut self) {
        self.runs.clear();
    }

    /// Appends a statement for each run to `text`, each ended by `;`, and empties the runs.
    pub(crate) fn take_text(&mut self, text: &mut String) {
        for run in self.runs.drain(..) {
            run.write(text);
            text.push_str(";\n");
        }
    }
}

impl Run {
    /// The run's statement: a plain `UPDATE … WHERE key = …` for one row, an
    /// `UPDATE … FROM (VALUES …)` for several.
    fn write(&self, out: &mut String) {
        let Shape {
            table,
            key,
            columns,
        } = &self.shape;
        if let [((_, row_key), literals)] = self.rows.as_slice() {
            let _ = write!(out, "UPDATE \"{table}\" SET ");
            for (i, (column, literal)) in columns.iter().zip(literals).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "\"{column}\" = {literal}");
            }
            let _ = write!(out, " WHERE \"{key}\" = {row_key}");
            return;
        }
        let _ = write!(out, "UPDATE \"{table}\" AS r SET ");
        for (i, column) in columns.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "\"{column}\" = v.\"{column}\"");
        }
        out.push_str(" FROM (VALUES ");
        for (i, ((_, row_key), literals)) in self.rows.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "({row_key}");
            for literal in literals {
                let _ = write!(out, ", {literal}");
            }
            out.push(')');
        }
        let _ = write!(out, ") AS v(\"{key}\"");
        for column in columns {
            let _ = write!(out, ", \"{column}\"");
        }
        let _ = write!(out, ") WHERE r.\"{key}\" = v.\"{key}\"");
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    fn row(id: &str, columns: &[(&'static str, i64)]) -> WrittenRow {
        RowUpdate {
            table: "events",
            key: ("id", Value::String(Some(id.to_owned()))),
            columns: columns
                .iter()
                .map(|(name, value)| (*name, Value::BigInt(Some(*value))))
                .collect(),
        }
        .written()
        .expect("written")
    }

    fn text(runs: &mut RowRuns) -> String {
        let mut text = String::new();
        runs.take_text(&mut text);
        // The dollar quotes' tags are random.
        text.split('$')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join("$")
    }

    #[test]
    fn rows_of_one_shape_in_a_row_are_one_statement() {
        let mut runs = RowRuns::default();
        runs.push(row("a", &[("revision", 2)]));
        runs.push(row("b", &[("revision", 5)]));
        assert_eq!(runs.statements(), 1);
        assert_eq!(
            text(&mut runs),
            "UPDATE \"events\" AS r SET \"revision\" = v.\"revision\" FROM (VALUES \
             (($a$::text), ('2'::int8)), (($b$::text), ('5'::int8))) AS v(\"id\", \"revision\") \
             WHERE r.\"id\" = v.\"id\";\n"
        );
        assert!(runs.is_empty());
    }

    #[test]
    fn a_lone_row_is_a_plain_update() {
        let mut runs = RowRuns::default();
        runs.push(row("a", &[("revision", 2), ("sequence", 3)]));
        assert_eq!(
            text(&mut runs),
            "UPDATE \"events\" SET \"revision\" = ('2'::int8), \"sequence\" = ('3'::int8) \
             WHERE \"id\" = ($a$::text);\n"
        );
    }

    #[test]
    fn a_row_updated_again_or_of_another_shape_starts_a_run_after() {
        let mut runs = RowRuns::default();
        runs.push(row("a", &[("revision", 2)]));
        runs.push(row("a", &[("revision", 3)]));
        runs.push(row("b", &[("revision", 2), ("sequence", 1)]));
        runs.push(row("c", &[("revision", 2)]));
        assert_eq!(runs.statements(), 4);
        let text = text(&mut runs);
        let order: Vec<_> = [
            "'2'::int8), \"sequence\"",
            "('3'::int8)",
            "WHERE \"id\" = ($c$",
        ]
        .iter()
        .map(|part| text.find(part).expect(part))
        .collect();
        assert!(
            text.starts_with(
                "UPDATE \"events\" SET \"revision\" = ('2'::int8) WHERE \"id\" = ($a$"
            )
        );
        assert!(order[1] < order[0] && order[0] < order[2], "{text}");
    }

    #[test]
    fn a_value_that_cannot_be_written_is_not_taken() {
        let update = RowUpdate {
            table: "events",
            key: ("id", Value::String(Some("a\0b".to_owned()))),
            columns: vec![("revision", Value::BigInt(Some(2)))],
        };
        assert!(update.written().is_none());
    }
}
