//! Published event pages: how an event is published (mode, indexability, what readers learn
//! of who is coming, the page's look from a closed set of choices), the names people give
//! on the page, and the summary of answers a reader sees.
//!
//! The look is a closed set on purpose: an organizer picks among named options and never
//! writes CSS, so an unknown key or value is refused rather than stored.

use serde::{Deserialize, Serialize};

/// Longest name a page visitor or organizer gives, in characters (longer is cut).
pub const MAX_NAME_CHARS: usize = 80;
/// The name shown for a `going` answer of an account without one.
const NAMELESS: &str = "Guest";

/// Who may read the page: `link` (anyone with its address) or `public` (the same, and the
/// page may say it can be indexed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PageMode {
    /// Anyone with the address; never indexed.
    Link,
    /// Anyone with the address; may be indexed.
    Public,
}

/// What readers of the page learn of who is coming.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AttendeeVisibility {
    /// How many are going, maybe coming, or not.
    #[default]
    Counts,
    /// The counts and the names of those going.
    Names,
    /// Nothing but the reader's own answer.
    Hidden,
}

/// The page's cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Cover {
    /// None.
    #[default]
    None,
    /// A wash of colour.
    Wash,
    /// A grid.
    Grid,
}

/// The page's typeface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Font {
    /// Serif.
    #[default]
    Serif,
    /// Sans-serif.
    Sans,
}

/// The page's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Classic.
    #[default]
    Classic,
    /// Poster.
    Poster,
}

/// The page's palette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Palette {
    /// Sand.
    #[default]
    Sand,
    /// Ink.
    Ink,
    /// Moss.
    Moss,
    /// Harbour.
    Harbour,
    /// Plum.
    Plum,
}

/// How a page looks: one option of each closed set (a missing one is its default; any other
/// key or value is refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PageTheme {
    /// Cover.
    pub cover: Cover,
    /// Typeface.
    pub font: Font,
    /// Layout.
    pub layout: Layout,
    /// Palette.
    pub palette: Palette,
}

impl PageTheme {
    /// The stored form (JSON).
    pub fn stored(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }

    /// Reads the stored form; a row that no longer parses reads as the default look.
    pub fn from_stored(text: &str) -> Self {
        serde_json::from_str(text).unwrap_or_default()
    }
}

/// How an event is published, as checked: an indexable page is a public one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Publication {
    /// Who may read it.
    pub mode: PageMode,
    /// Whether it may be indexed.
    pub indexable: bool,
    /// What readers learn of who is coming.
    pub attendee_visibility: AttendeeVisibility,
    /// Its look.
    pub theme: PageTheme,
}

impl Publication {
    /// Checks the settings together (`indexable` needs `public`).
    pub fn new(
        mode: PageMode,
        indexable: bool,
        attendee_visibility: AttendeeVisibility,
        theme: PageTheme,
    ) -> Result<Self, &'static str> {
        if indexable && mode != PageMode::Public {
            return Err("Only a public event page can be indexable...");
        }
        Ok(Self {
            mode,
            indexable,
            attendee_visibility,
            theme,
        })
    }
}

impl PageMode {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Link => "link",
            Self::Public => "public",
        }
    }

    /// Reads the stored form (anything unknown is the narrower `link`).
    pub fn from_stored(text: &str) -> Self {
        if text == "public" {
            Self::Public
        } else {
            Self::Link
        }
    }
}

impl AttendeeVisibility {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counts => "counts",
            Self::Names => "names",
            Self::Hidden => "hidden",
        }
    }

    /// Reads the stored form (anything unknown reveals the least: `hidden`).
    pub fn from_stored(text: &str) -> Self {
        match text {
            "counts" => Self::Counts,
            "names" => Self::Names,
            _ => Self::Hidden,
        }
    }
}

/// A name given on a page: trimmed, control characters dropped, cut to
/// [`MAX_NAME_CHARS`]; `None` when nothing is left.
pub fn given_name(raw: &str) -> Option<String> {
    let name: String = raw
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME_CHARS)
        .collect();
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// A page answer: going, maybe or declined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Rsvp {
    /// Going.
    Going,
    /// Maybe.
    Maybe,
    /// Not going.
    Declined,
}

impl Rsvp {
    /// Reads a stored attendance status (`none` and anything else is no answer).
    pub fn from_stored(text: &str) -> Option<Self> {
        match text {
            "going" => Some(Self::Going),
            "maybe" => Some(Self::Maybe),
            "declined" => Some(Self::Declined),
            _ => None,
        }
    }
}

/// One answer in the event's attendee list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer<'a> {
    /// Whether it is the reader's own.
    pub mine: bool,
    /// The attendee's name (may be empty).
    pub name: &'a str,
    /// The answer.
    pub status: Rsvp,
}

/// How many gave each answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, utoipa::ToSchema)]
pub struct RsvpCounts {
    /// Not going.
    pub declined: usize,
    /// Going.
    pub going: usize,
    /// Maybe.
    pub maybe: usize,
}

/// What a page reader learns of the answers: the counts (zero when hidden), their own
/// answer, and, when the organizer chose `names`, the names of those going (never of those
/// who said maybe or no), sorted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct RsvpSummary {
    /// The counts (all zero when the page hides them).
    pub counts: RsvpCounts,
    /// The reader's own answer.
    pub mine: Option<Rsvp>,
    /// Names of those going, with `names` visibility; else empty.
    pub names: Vec<String>,
    /// What the organizer lets readers see.
    pub visibility: AttendeeVisibility,
}

impl RsvpSummary {
    /// The summary of `answers` as `visibility` allows.
    pub fn of<'a>(
        answers: impl IntoIterator<Item = Answer<'a>>,
        visibility: AttendeeVisibility,
    ) -> Self {
        let mut counts = RsvpCounts::default();
        let mut mine = None;
        let mut names = Vec::new();
        for answer in answers {
            match answer.status {
                Rsvp::Going => counts.going += 1,
                Rsvp::Maybe => counts.maybe += 1,
                Rsvp::Declined => counts.declined += 1,
            }
            if answer.mine {
                mine = Some(answer.status);
            }
            if visibility == AttendeeVisibility::Names && answer.status == Rsvp::Going {
                let name = answer.name.trim();
                names.push(if name.is_empty() { NAMELESS } else { name }.to_owned());
            }
        }
        names.sort_by_key(|name| name.to_lowercase());
        if visibility == AttendeeVisibility::Hidden {
            counts = RsvpCounts::default();
        }
        Self {
            counts,
            mine,
            names,
            visibility,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn answer(name: &str, status: Rsvp, mine: bool) -> Answer<'_> {
        Answer { mine, name, status }
    }

    #[test]
    fn a_theme_is_a_closed_set_with_defaults() {
        let theme: PageTheme = serde_json::from_str(r#"{"palette":"moss"}"#).unwrap();
        assert_eq!(theme.palette, Palette::Moss);
        assert_eq!(theme.font, Font::Serif);
        assert!(serde_json::from_str::<PageTheme>(r#"{"css":"body{}"}"#).is_err());
        assert!(serde_json::from_str::<PageTheme>(r#"{"palette":"red;}"}"#).is_err());
        assert_eq!(PageTheme::from_stored(&theme.stored()), theme);
        assert_eq!(PageTheme::from_stored("not json"), PageTheme::default());
    }

    #[test]
    fn only_a_public_page_is_indexable() {
        let theme = PageTheme::default();
        let counts = AttendeeVisibility::Counts;
        assert!(Publication::new(PageMode::Link, true, counts, theme).is_err());
        assert!(Publication::new(PageMode::Public, true, counts, theme).is_ok());
        assert!(Publication::new(PageMode::Link, false, counts, theme).is_ok());
    }

    #[test]
    fn names_are_trimmed_cut_and_never_blank() {
        assert_eq!(given_name("  Ada \r\n"), Some("Ada".to_owned()));
        assert_eq!(given_name(" \t "), None);
        assert_eq!(given_name(&"x".repeat(200)).unwrap().chars().count(), 80);
        assert_eq!(given_name("A\u{0}da"), Some("Ada".to_owned()));
    }

    #[test]
    fn a_summary_shows_what_the_visibility_allows() {
        let answers = || {
            vec![
                answer("zoe", Rsvp::Going, false),
                answer("", Rsvp::Going, true),
                answer("Bob", Rsvp::Maybe, false),
                answer("Al", Rsvp::Declined, false),
            ]
        };
        let names = RsvpSummary::of(answers(), AttendeeVisibility::Names);
        assert_eq!(names.names, vec!["Guest", "zoe"]);
        assert_eq!(
            names.counts,
            RsvpCounts {
                declined: 1,
                going: 2,
                maybe: 1
            }
        );
        assert_eq!(names.mine, Some(Rsvp::Going));
        let counts = RsvpSummary::of(answers(), AttendeeVisibility::Counts);
        assert!(counts.names.is_empty());
        assert_eq!(counts.counts.going, 2);
        let hidden = RsvpSummary::of(answers(), AttendeeVisibility::Hidden);
        assert_eq!(hidden.counts, RsvpCounts::default());
        assert!(hidden.names.is_empty());
        assert_eq!(hidden.mine, Some(Rsvp::Going));
    }
}
