//! Which server wire a run speaks (`--wire`): Bowline's, with its extras (an event's
//! `revision`, the `409 EVENT_CONFLICT` it enables, the `svc_` metrics listener), or the
//! original Musubi implementation's, which has none of them. What identifies an
//! acknowledged state of an event ([`Mark`]) and the server's memory sample names follow
//! from it; the checks that need the extras say so in the report ([`Coverage`]).
//!
//! [`Coverage`]: crate::verify::Coverage

use clap::ValueEnum;
use serde::Serialize;
use serde_json::Value;

/// The server wire of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// Bowline's: events carry `revision`, updates send it and a stale one is a 409.
    Bowline,
    /// The original's: no `revision` (updates overwrite, last writer wins), no conflicts,
    /// metrics named `musubi_` or absent.
    Musubi,
}

/// What identifies one acknowledged state of an event in answers and frames.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mark {
    /// Bowline's `revision`.
    Revision(i64),
    /// The original's wire has no revision: the event's `title` (every write of the tool
    /// gives an event a title of its own, so a title names the write that left it).
    Title(String),
}

impl Wire {
    /// The mark of the event document `event` (an answer or a frame's payload), if it has
    /// the field this wire identifies states by.
    pub fn mark(self, event: &Value) -> Option<Mark> {
        match self {
            Self::Bowline => event["revision"].as_i64().map(Mark::Revision),
            Self::Musubi => event["title"].as_str().map(|t| Mark::Title(t.to_owned())),
        }
    }

    /// Whether events carry a `revision` that updates send back (and a stale one is a 409).
    pub fn has_revisions(self) -> bool {
        self == Self::Bowline
    }

    /// Whether a delta read lists in `deletedIds` an event whose every link was removed (the
    /// original lists only tombstones that keep a link, never what a full delete removed).
    pub fn lists_full_deletions(self) -> bool {
        self == Self::Bowline
    }

    /// The server's resident memory samples, in the order they are tried.
    pub fn resident_memory_samples(self) -> &'static [&'static str] {
        match self {
            Self::Bowline => &[BOWLINE_RESIDENT_MEMORY],
            // The original exports prom-client's defaults with its own prefix; a Bowline
            // answering without its extras still has its own.
            Self::Musubi => &[MUSUBI_RESIDENT_MEMORY, BOWLINE_RESIDENT_MEMORY],
        }
    }

    /// Whether a run fails when `--metrics` cannot be read (on the original's wire the
    /// listener may be absent or named otherwise: the memory is then reported unmeasured).
    pub fn requires_metrics(self) -> bool {
        self == Self::Bowline
    }

    /// The name used in `--wire`, tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bowline => "bowline",
            Self::Musubi => "musubi",
        }
    }
}

/// Bowline's resident memory sample.
pub const BOWLINE_RESIDENT_MEMORY: &str = "svc_process_resident_memory_bytes";
/// The original's resident memory sample (prom-client's default, `musubi_` prefix).
pub const MUSUBI_RESIDENT_MEMORY: &str = "musubi_process_resident_memory_bytes";

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bowline_marks_by_revision_and_the_original_by_title_only() {
        let with_extras = json!({ "id": "x", "title": "w1-2", "revision": 3 });
        let without = json!({ "id": "x", "title": "w1-2" });
        assert_eq!(Wire::Bowline.mark(&with_extras), Some(Mark::Revision(3)));
        assert_eq!(Wire::Bowline.mark(&without), None);
        assert_eq!(
            Wire::Musubi.mark(&with_extras),
            Some(Mark::Title("w1-2".into())),
            "the original's wire never reads a revision, even when one is there"
        );
        assert_eq!(
            Wire::Musubi.mark(&without),
            Some(Mark::Title("w1-2".into()))
        );
        assert!(Wire::Bowline.has_revisions() && !Wire::Musubi.has_revisions());
        assert!(Wire::Bowline.lists_full_deletions() && !Wire::Musubi.lists_full_deletions());
        assert_eq!(
            Wire::Musubi.resident_memory_samples()[0],
            "musubi_process_resident_memory_bytes"
        );
    }
}
