//! The rules every stored event follows, whichever path writes it (the events API, import,
//! link, fork, provider sync): times in the years 1 to 9999 with the start not after the end,
//! texts within their limits, and a recurrence rule [`super::recurrence::check`] accepts.
//! One check ([`EventContent::check`]) for all of them, so no path can store what another
//! refuses and no reader meets a row it cannot read.

use chrono::{DateTime, Datelike, Utc};

use super::recurrence::{self, RuleProblem, expansion::Budget};
use super::time::YEARS;
use crate::error::AppError;

/// The fields every stored event has, whichever path writes it (the events API, import,
/// link, fork, provider sync): [`EventContent::check`] holds them to the same rules.
#[derive(Debug, Clone, Copy)]
pub struct EventContent<'a> {
    /// Title.
    pub title: &'a str,
    /// Organizer.
    pub organizer: &'a str,
    /// Colour.
    pub color: &'a str,
    /// Start.
    pub start: DateTime<Utc>,
    /// End.
    pub end: DateTime<Utc>,
    /// Description.
    pub description: Option<&'a str>,
    /// Location.
    pub location: Option<&'a str>,
    /// Recurrence (see [`super::recurrence`]).
    pub recurrence: Option<&'a str>,
    /// URL.
    pub url: Option<&'a str>,
}

/// Why event content is refused: the field, and a message naming it, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentProblem {
    /// The field at fault.
    pub field: &'static str,
    /// What the client is told.
    pub message: String,
}

impl ContentProblem {
    fn new(field: &'static str, message: String) -> Self {
        Self { field, message }
    }
}

impl From<ContentProblem> for AppError {
    fn from(problem: ContentProblem) -> Self {
        AppError::bad_request(problem.message)
    }
}

/// The longest text each field may hold, in characters.
pub const TEXT_LIMITS: [(&str, usize); 7] = [
    ("title", 1_000),
    ("organizer", 1_000),
    ("color", 32),
    ("description", 50_000),
    ("location", 2_000),
    ("recurrence", 20_000),
    ("url", 2_048),
];

impl EventContent<'_> {
    /// Times in the years 1 to 9999 with the start not after the end, texts within
    /// [`TEXT_LIMITS`], and a recurrence rule [`super::recurrence::check`] accepts.
    pub fn check(&self) -> Result<(), ContentProblem> {
        self.check_rule_with(recurrence::check)
    }

    /// [`Self::check`], the recurrence checked within `budget` (shared by the events of an
    /// import, [`super::recurrence::check_within`]).
    pub fn check_within(&self, budget: &mut Budget) -> Result<(), ContentProblem> {
        self.check_rule_with(|rule, start, end| recurrence::check_within(rule, start, end, budget))
    }

    fn check_rule_with(
        &self,
        check_rule: impl FnOnce(&str, DateTime<Utc>, DateTime<Utc>) -> Result<(), RuleProblem>,
    ) -> Result<(), ContentProblem> {
        for (field, at) in [("start", self.start), ("end", self.end)] {
            if !YEARS.contains(&at.year()) {
                return Err(ContentProblem::new(
                    field,
                    format!("{field} must lie in the years 1 to 9999."),
                ));
            }
        }
        if self.start > self.end {
            return Err(ContentProblem::new(
                "start",
                "start must not be after end.".into(),
            ));
        }
        let texts = [
            Some(self.title),
            Some(self.organizer),
            Some(self.color),
            self.description,
            self.location,
            self.recurrence,
            self.url,
        ];
        for ((field, max), text) in TEXT_LIMITS.iter().zip(texts) {
            if text.is_some_and(|text| text.chars().count() > *max) {
                return Err(ContentProblem::new(
                    field,
                    format!("{field} must be at most {max} characters."),
                ));
            }
        }
        if let Some(rule) = self.recurrence {
            check_rule(rule, self.start, self.end)
                .map_err(|problem| ContentProblem::new("recurrence", problem.message()))?;
        }
        Ok(())
    }
}
