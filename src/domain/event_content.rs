//! The rules every stored event follows, whichever path writes it (the events API, import,
//! link, fork, provider sync): times in the years 1 to 9999 with the start not after the end,
//! texts within their limits, and a recurrence rule [`super::recurrence::check`] accepts.
//! One check ([`EventContent::check`]) for all of them, so no path can store what another
//! refuses and no reader meets a row it cannot read.

use chrono::{DateTime, Datelike, Utc};

use super::event_fields::event_fields;
use super::recurrence::{self, RuleProblem, expansion::Budget};
use super::time::YEARS;
use crate::error::AppError;

/// Writes [`EventContent`] with the content fields of [`event_fields!`], each borrowed by
/// its kind, and [`EventContent::check_texts`], which holds every text to its limit.
macro_rules! event_content {
    (@fields $content:ident [$($done:tt)*] [$($texts:tt)*]) => {
        /// The fields every stored event has, whichever path writes it (the events API,
        /// import, link, fork, provider sync): [`EventContent::check`] holds them to the
        /// same rules.
        #[derive(Debug, Clone, Copy)]
        pub struct EventContent<'a> {
            $($done)*
        }

        impl EventContent<'_> {
            /// Every text within its [`TEXT_LIMITS`], in the order of the fields.
            fn check_texts($content: &Self) -> Result<(), ContentProblem> {
                $($texts)*
                Ok(())
            }
        }
    };
    (@fields $content:ident [$($done:tt)*] [$($texts:tt)*] $name:ident: [$($ty:tt)*] text $wire:literal $doc:literal, $($rest:tt)*) => {
        event_content!(@fields $content [$($done)* #[doc = $doc] pub $name: &'a str,]
            [$($texts)* within_limit(stringify!($name), Some($content.$name))?;] $($rest)*);
    };
    (@fields $content:ident [$($done:tt)*] [$($texts:tt)*] $name:ident: [$($ty:tt)*] optional $wire:literal $doc:literal, $($rest:tt)*) => {
        event_content!(@fields $content [$($done)* #[doc = $doc] pub $name: Option<&'a str>,]
            [$($texts)* within_limit(stringify!($name), $content.$name)?;] $($rest)*);
    };
    (@fields $content:ident [$($done:tt)*] [$($texts:tt)*] $name:ident: [$($ty:tt)*] time $wire:literal $doc:literal, $($rest:tt)*) => {
        event_content!(@fields $content [$($done)* #[doc = $doc] pub $name: $($ty)*,] [$($texts)*] $($rest)*);
    };
    // Flags follow no rule.
    (@fields $content:ident [$($done:tt)*] [$($texts:tt)*] $name:ident: [$($ty:tt)*] flag $wire:literal $doc:literal, $($rest:tt)*) => {
        event_content!(@fields $content [$($done)*] [$($texts)*] $($rest)*);
    };
    ($content:ident; $($list:tt)*) => {
        event_content!(@fields $content [] [] $($list)*);
    };
}

event_fields!(event_content { content; });

/// The [`EventContent`] of `$source`, anything with every content field of
/// [`event_fields!`] (an input or a stored row): `event_content_of!(event)`, with
/// `event_content_of` in scope.
macro_rules! event_content_of {
    ($source:expr) => {
        $crate::domain::event_fields::event_fields!(event_content_of { @of $source; })
    };
    (@of $source:expr; $($list:tt)*) => {
        $crate::domain::event_content::event_content_of!(@fields $source; [] $($list)*)
    };
    (@fields $source:expr; [$($done:tt)*]) => {
        $crate::domain::event_content::EventContent { $($done)* }
    };
    (@fields $source:expr; [$($done:tt)*] $name:ident: [$($ty:tt)*] text $wire:literal $doc:literal, $($rest:tt)*) => {
        $crate::domain::event_content::event_content_of!(@fields $source; [$($done)* $name: &$source.$name,] $($rest)*)
    };
    (@fields $source:expr; [$($done:tt)*] $name:ident: [$($ty:tt)*] optional $wire:literal $doc:literal, $($rest:tt)*) => {
        $crate::domain::event_content::event_content_of!(@fields $source; [$($done)* $name: $source.$name.as_deref(),] $($rest)*)
    };
    (@fields $source:expr; [$($done:tt)*] $name:ident: [$($ty:tt)*] time $wire:literal $doc:literal, $($rest:tt)*) => {
        $crate::domain::event_content::event_content_of!(@fields $source; [$($done)* $name: $source.$name,] $($rest)*)
    };
    (@fields $source:expr; [$($done:tt)*] $name:ident: [$($ty:tt)*] flag $wire:literal $doc:literal, $($rest:tt)*) => {
        $crate::domain::event_content::event_content_of!(@fields $source; [$($done)*] $($rest)*)
    };
}

pub(crate) use event_content_of;

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

/// `text` (the field `field`) within the field's limit in [`TEXT_LIMITS`]; a text field
/// without one is refused whole, which the tests below never let happen.
fn within_limit(field: &'static str, text: Option<&str>) -> Result<(), ContentProblem> {
    let Some(text) = text else {
        return Ok(());
    };
    let max = TEXT_LIMITS
        .iter()
        .find(|(name, _)| *name == field)
        .map_or(0, |(_, max)| *max);
    if text.chars().count() > max {
        return Err(ContentProblem::new(
            field,
            format!("{field} must be at most {max} characters."),
        ));
    }
    Ok(())
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
        Self::check_texts(self)?;
        if let Some(rule) = self.recurrence {
            check_rule(rule, self.start, self.end)
                .map_err(|problem| ContentProblem::new("recurrence", problem.message()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! fields_and_kinds {
        ($($name:ident: [$($ty:tt)*] $kind:ident $wire:literal $doc:literal,)*) => {
            [$((stringify!($name), stringify!($kind)),)*]
        };
    }

    #[test]
    fn every_text_field_has_a_limit() {
        for (name, kind) in event_fields!(fields_and_kinds {}) {
            if matches!(kind, "text" | "optional") {
                assert!(
                    TEXT_LIMITS.iter().any(|(field, _)| *field == name),
                    "{name} has no limit in TEXT_LIMITS"
                );
            }
        }
    }
}
