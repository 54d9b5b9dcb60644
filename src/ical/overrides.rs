//! RECURRENCE-ID overrides, attached to their series.
//!
//! Bowline has no per-instance exceptions, so an override is kept as **an EXDATE on its
//! series for the instance it replaces plus the override as an event of its own** (with
//! its own title, times and status: a `STATUS:CANCELLED` override becomes a cancelled
//! event, so the instance stays visible as cancelled). The series is found by UID (the
//! first VEVENT of that UID with a recurrence and no RECURRENCE-ID; overrides may come
//! before it). The instance is read like the series' own times: a DATE RECURRENCE-ID on a
//! timed series means that day at the series' time of day, a floating one the series'
//! zone.
//!
//! `RANGE=THISANDFUTURE` splits the series the way calendar apps store a "this and
//! following" edit: the series ends before the instance (COUNT shortened or UNTIL set), and
//! the override becomes a series of its own from its start with the same rule (the
//! remaining COUNT, or UNTIL moved by the override's shift), taking the RDATEs and EXDATEs
//! from that instance on, shifted. Later overrides attach to whichever part holds their
//! instance. An override whose series is not in the file (a single-instance invitation)
//! is simply an event; an override without DTEND or DURATION lasts as long as its series.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};

use super::IcsError;
use super::import::Draft;
use super::timezones::ZoneResolver;
use crate::domain::recurrence::expansion::Budget;

/// One part of a (possibly split) series: its draft, the first original instance it
/// holds, and how far its instances are moved from their original times.
#[derive(Debug, Clone, Copy)]
struct Segment {
    draft: usize,
    from: DateTime<Utc>,
    shift: Duration,
}

/// Attaches every override in `drafts` to its series (see the module doc). Splitting a
/// series counts its instances, within `budget`: a file whose splits need more is refused.
pub fn attach(
    drafts: &mut [Draft],
    resolver: &mut ZoneResolver,
    budget: &mut Budget,
) -> Result<(), IcsError> {
    let mut masters: HashMap<&str, usize> = HashMap::new();
    for (index, draft) in drafts.iter().enumerate() {
        if draft.recurrence_id.is_none()
            && draft.rules.is_recurring()
            && let Some(uid) = draft.uid.as_deref()
        {
            masters.entry(uid).or_insert(index);
        }
    }
    let mut by_master: HashMap<usize, Vec<(usize, DateTime<Utc>, bool)>> = HashMap::new();
    for (index, draft) in drafts.iter().enumerate() {
        let (Some((value, tzid, future)), Some(uid)) = (&draft.recurrence_id, &draft.uid) else {
            continue;
        };
        let Some(&master) = masters.get(uid.as_str()) else {
            continue;
        };
        let original = drafts[master]
            .clock
            .instant(resolver, *value, tzid.as_deref());
        by_master
            .entry(master)
            .or_default()
            .push((index, original, *future));
    }
    let mut masters: Vec<_> = by_master.into_iter().collect();
    masters.sort_by_key(|(master, _)| *master);
    for (master, mut found) in masters {
        found.sort_by_key(|(index, original, _)| (*original, *index));
        attach_to_series(drafts, master, &found, budget)?;
    }
    Ok(())
}

fn attach_to_series(
    drafts: &mut [Draft],
    master: usize,
    found: &[(usize, DateTime<Utc>, bool)],
    budget: &mut Budget,
) -> Result<(), IcsError> {
    let mut segments = vec![Segment {
        draft: master,
        from: DateTime::<Utc>::MIN_UTC,
        shift: Duration::zero(),
    }];
    for &(index, original, _) in found.iter().filter(|(_, _, future)| *future) {
        let segment = covering(&segments, original);
        split(drafts, segment, index, original, budget)?;
        segments.push(Segment {
            draft: index,
            from: original,
            shift: drafts[index].event.start - original,
        });
    }
    for &(index, original, future) in found {
        let segment = covering(&segments, original);
        if !future {
            let instance = original + segment.shift;
            drafts[segment.draft].rules.exdates.push(instance);
        }
        if !drafts[index].explicit_end {
            let series = &drafts[segment.draft].event;
            let length = series.end - series.start;
            let override_event = &mut drafts[index].event;
            override_event.end = override_event
                .start
                .checked_add_signed(length)
                .unwrap_or(override_event.start);
        }
    }
    Ok(())
}

/// The segment holding the original instance `original` (segments are in `from` order).
fn covering(segments: &[Segment], original: DateTime<Utc>) -> Segment {
    segments
        .iter()
        .rev()
        .find(|segment| segment.from <= original)
        .or(segments.first())
        .copied()
        .unwrap_or(Segment {
            draft: 0,
            from: original,
            shift: Duration::zero(),
        })
}

/// Ends `segment` before the original instance `original` and makes draft `tail` the rest
/// of the series from its own start.
fn split(
    drafts: &mut [Draft],
    segment: Segment,
    tail: usize,
    original: DateTime<Utc>,
    budget: &mut Budget,
) -> Result<(), IcsError> {
    if segment.draft == tail {
        return Ok(());
    }
    let cut = original + segment.shift;
    let head = &drafts[segment.draft];
    let head_start = head.event.start;
    let delta = drafts[tail].event.start - cut;
    let before = head
        .rules
        .count_before(head_start, cut, budget)
        .ok_or_else(|| {
            IcsError::at(
                drafts[tail].line,
                "this RANGE=THISANDFUTURE override splits a series with too many instances",
            )
        })?;
    let mut tail_rules = head.rules.clone();
    let mut head_rules = head.rules.clone();

    for rule in &mut tail_rules.rrules {
        match rule.count() {
            Some(count) => rule.set_count(count.saturating_sub(before).max(1)),
            None => rule.shift_until(delta),
        }
    }
    tail_rules.rdates = moved(&head_rules.rdates, cut, delta);
    tail_rules.exdates = moved(&head_rules.exdates, cut, delta);
    head_rules.rdates.retain(|at| *at < cut);
    head_rules.exdates.retain(|at| *at < cut);
    for rule in &mut head_rules.rrules {
        match rule.count() {
            Some(_) => rule.set_count(before.max(1)),
            None => rule.set_until(cut - Duration::seconds(1)),
        }
    }
    let head = &mut drafts[segment.draft];
    if cut <= head_start || (before == 0 && head_rules.rdates.is_empty()) {
        head.dropped = true; // every instance of it was replaced
    }
    head.rules = head_rules;
    drafts[tail].rules = tail_rules;
    Ok(())
}

fn moved(instants: &[DateTime<Utc>], cut: DateTime<Utc>, delta: Duration) -> Vec<DateTime<Utc>> {
    instants
        .iter()
        .filter(|at| **at >= cut)
        .map(|at| *at + delta)
        .collect()
}
