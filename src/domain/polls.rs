//! Scheduling polls' rules: what a poll, its days, a participant's identity and an answer
//! must be; when a poll is shut; who organizes it; and what the answers add up to (the grid
//! a participant sees, the counts of the organizer's calendar layer). Addresses are checked
//! here and never leave: the grid names people, it does not say how to write to them.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};

use super::ids::UserId;
use super::time::{YEARS, parse_timestamp};
use crate::error::AppError;
use ids::{PollParticipantId, PollSlotId};

/// At most this many days to choose from (a month of days at a couple of times each).
pub const MAX_SLOTS: usize = 60;
/// A title is cut to this many characters.
pub const MAX_TITLE: usize = 120;
/// A participant's or organizer's name is cut to this many characters.
pub const MAX_NAME: usize = 120;
/// A description is cut to what an event's description may hold (its limit in
/// [`super::event_content::TEXT_LIMITS`]), so the decided event always takes it.
pub const MAX_DESCRIPTION: usize = 50_000;
/// Every slot lasts a day; kept as `durationMinutes` for older clients.
pub const DAY_MINUTES: i32 = 24 * 60;
/// The colour of a decided poll's event.
pub const DECIDED_COLOR: &str = "#c8553d";
/// The name shown for a participant whose name is blank.
const NAMELESS: &str = "Guest";

/// `text` on one line (control characters, line breaks among them, become spaces),
/// trimmed and cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    line.trim()
        .chars()
        .take(max)
        .collect::<String>()
        .trim_end()
        .to_owned()
}

/// A poll's title: one line of at most [`MAX_TITLE`] characters (longer ones are cut);
/// blank is a 400.
pub fn title(raw: Option<&str>) -> Result<String, AppError> {
    let title = one_line(raw.unwrap_or_default(), MAX_TITLE);
    if title.is_empty() {
        return Err(AppError::bad_request("A poll needs a title..."));
    }
    Ok(title)
}

/// A poll's description, trimmed and cut to [`MAX_DESCRIPTION`]; blank is none.
pub fn description(raw: Option<&str>) -> Option<String> {
    let text: String = raw
        .unwrap_or_default()
        .trim()
        .chars()
        .take(MAX_DESCRIPTION)
        .collect();
    (!text.is_empty()).then_some(text)
}

/// A person's name on a poll: one line of at most [`MAX_NAME`] characters; blank is a 400.
pub fn person_name(raw: Option<&str>) -> Result<String, AppError> {
    let name = one_line(raw.unwrap_or_default(), MAX_NAME);
    if name.is_empty() {
        return Err(AppError::bad_request("Enter your name..."));
    }
    Ok(name)
}

/// A person's address on a poll, lower case: a well-formed address
/// ([`super::email::is_valid`]) with nothing but spaces around it (a line break anywhere is
/// a 400, not trimmed away).
pub fn email_identity(raw: Option<&str>) -> Result<String, AppError> {
    let invalid = || AppError::bad_request("Enter a valid email address...");
    let raw = raw.ok_or_else(invalid)?;
    if raw.chars().any(char::is_control) {
        return Err(invalid());
    }
    let email = raw.trim().to_lowercase();
    if super::email::is_valid(&email) {
        Ok(email)
    } else {
        Err(invalid())
    }
}

/// The optional wall-clock hint: `HH:mm` (00:00 to 23:59); blank is none.
pub fn approximate_start_time(raw: Option<&str>) -> Result<Option<String>, AppError> {
    let time = raw.unwrap_or_default().trim();
    if time.is_empty() {
        return Ok(None);
    }
    let bytes = time.as_bytes();
    let digit = |i: usize| bytes[i].is_ascii_digit();
    let well_formed = bytes.len() == 5
        && bytes[2] == b':'
        && digit(0)
        && digit(1)
        && digit(3)
        && digit(4)
        && (bytes[0] < b'2' || bytes[1] <= b'3')
        && bytes[0] <= b'2'
        && bytes[3] <= b'5';
    if !well_formed {
        return Err(AppError::bad_request(
            "approximateStartTime must be HH:mm...",
        ));
    }
    Ok(Some(time.to_owned()))
}

/// A candidate day's start and end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SlotTimes {
    /// Start.
    pub start: DateTime<Utc>,
    /// End: a day later.
    pub end: DateTime<Utc>,
}

/// A slot as sent: `date` (`YYYY-MM-DD`) is that day at 12:00 UTC; without one, `start` (a
/// timestamp) is the start. Every slot lasts 24 hours and lies in the years 1 to 9999.
pub fn slot_times(date: Option<&str>, start: Option<&str>) -> Result<SlotTimes, AppError> {
    let invalid = || AppError::bad_request("Every slot needs a valid start...");
    let date = date.unwrap_or_default();
    let date_shaped = date.len() == 10
        && date.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    let start = if date_shaped {
        let day = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|_| invalid())?;
        day.and_hms_opt(12, 0, 0)
            .map(|noon| Utc.from_utc_datetime(&noon))
            .ok_or_else(invalid)?
    } else {
        parse_timestamp(start.ok_or_else(invalid)?).ok_or_else(invalid)?
    };
    let end = start + Duration::minutes(i64::from(DAY_MINUTES));
    if !YEARS.contains(&start.year()) || !YEARS.contains(&end.year()) {
        return Err(invalid());
    }
    Ok(SlotTimes { start, end })
}

/// The slots of a new poll: at least one, at most [`MAX_SLOTS`], the same start once, in
/// order.
pub fn poll_slots(slots: Vec<SlotTimes>) -> Result<Vec<SlotTimes>, AppError> {
    if slots.is_empty() {
        return Err(AppError::bad_request(
            "A poll needs at least one day to choose from...",
        ));
    }
    if slots.len() > MAX_SLOTS {
        return Err(too_many_slots());
    }
    let mut slots = slots;
    slots.sort();
    slots.dedup_by_key(|slot| slot.start);
    Ok(slots)
}

/// 400: more slots than a poll may offer.
pub fn too_many_slots() -> AppError {
    AppError::bad_request(format!("A poll can offer at most {MAX_SLOTS} days..."))
}

/// An answer about one day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vote {
    /// `yes`.
    Yes,
    /// `if-needed`: possible, as a fallback.
    IfNeeded,
    /// `no`.
    No,
}

impl Vote {
    /// Parses `yes`, `if-needed` or `no`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "yes" => Some(Self::Yes),
            "if-needed" => Some(Self::IfNeeded),
            "no" => Some(Self::No),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Yes => "yes",
            Self::IfNeeded => "if-needed",
            Self::No => "no",
        }
    }
}

/// One person's answers as sent: each a day of the poll, each day once, each a [`Vote`];
/// at most one per day of the poll, so a body cannot make the work grow beyond the poll.
/// `offered` are the poll's days. An empty list withdraws every answer.
pub fn ballot<'a>(
    sent: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    offered: &[PollSlotId],
) -> Result<Vec<(PollSlotId, Vote)>, AppError> {
    if sent.len() > offered.len() {
        return Err(AppError::bad_request(
            "Answer each time on this poll at most once...",
        ));
    }
    let by_text: HashMap<String, PollSlotId> =
        offered.iter().map(|id| (id.to_string(), *id)).collect();
    let mut seen = HashSet::new();
    let mut ballot = Vec::with_capacity(sent.len());
    for (slot, value) in sent {
        let vote = Vote::parse(value)
            .ok_or_else(|| AppError::bad_request("A vote is yes, if-needed or no..."))?;
        let slot = by_text
            .get(&slot.to_ascii_lowercase())
            .copied()
            .ok_or_else(|| AppError::bad_request("None of those times are on this poll..."))?;
        if !seen.insert(slot) {
            return Err(AppError::bad_request(
                "Answer each time on this poll at most once...",
            ));
        }
        ballot.push((slot, vote));
    }
    Ok(ballot)
}

/// Whether a poll is shut to answers: closed (or decided), or past its deadline.
pub fn is_closed(
    closed_at: Option<DateTime<Utc>>,
    deadline: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> bool {
    closed_at.is_some() || deadline.is_some_and(|deadline| deadline < now)
}

/// Why a poll takes no answer now, if it does not.
pub fn refuses_answers(
    closed_at: Option<DateTime<Utc>>,
    deadline: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<AppError> {
    if closed_at.is_some() {
        return Some(already_decided());
    }
    if deadline.is_some_and(|deadline| deadline < now) {
        return Some(AppError::bad_request("This poll has closed for answers..."));
    }
    None
}

/// 400: the poll was decided (or closed) already.
pub fn already_decided() -> AppError {
    AppError::bad_request("This poll is already decided...")
}

/// 400: the poll was closed (or decided) already.
pub fn already_closed() -> AppError {
    AppError::bad_request("This poll is already closed...")
}

/// 404: no such poll, for its organizer's routes.
pub fn poll_not_found() -> AppError {
    AppError::not_found("Poll not found...")
}

/// 404: no poll at this address, for the public page.
pub fn poll_unavailable() -> AppError {
    AppError::not_found("This poll is not available...")
}

/// 400: the day picked is not one of the poll's.
pub fn slot_not_on_poll() -> AppError {
    AppError::bad_request("That time is not on this poll...")
}

/// The decided event's day: the chosen slot's UTC date, as an all-day event starts and
/// ends (its midnight).
pub fn decided_day(slot_start: DateTime<Utc>) -> DateTime<Utc> {
    Utc.from_utc_datetime(&slot_start.date_naive().and_time(chrono::NaiveTime::MIN))
}

/// The moment the poll-decided mail names: the slot's start in UTC, as the original's mail
/// writes it (`Wednesday 1 July 2026 at 12:00 UTC`).
pub fn decided_when(slot_start: DateTime<Utc>) -> String {
    slot_start.format("%A %-d %B %Y at %H:%M UTC").to_string()
}

/// The public page of the poll with `token` on the server at `base_url`.
pub fn poll_url(base_url: &str, token: &str) -> String {
    format!("{}/s/{token}", base_url.trim_end_matches('/'))
}

/// How someone signed in relates to a poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollRole {
    /// Its organizer: the owner, or the proven owner of its address.
    Organizer,
    /// Anyone else with a proven address.
    Participant,
}

impl PollRole {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Organizer => "organizer",
            Self::Participant => "participant",
        }
    }
}

/// Someone signed in, as a poll sees them.
#[derive(Debug, Clone, Copy)]
pub struct Viewer<'a> {
    /// Their account.
    pub id: &'a UserId,
    /// Their account's address.
    pub email: &'a str,
    /// Whether they proved it.
    pub email_verified: bool,
    /// Their account's name.
    pub name: &'a str,
}

impl Viewer<'_> {
    /// Their address, lower case, if they proved it: the only address a session vouches for.
    pub fn verified_email(&self) -> Option<String> {
        self.email_verified
            .then(|| self.email.trim().to_lowercase())
    }

    /// Their account's name as a poll shows it, if it has one.
    pub fn display_name(&self) -> Option<String> {
        Some(one_line(self.name, MAX_NAME)).filter(|name| !name.is_empty())
    }

    /// Their role on a poll owned by `owner_id` with the address `owner_email`: organizer
    /// when they own it or proved its address, participant when they proved another,
    /// none otherwise.
    pub fn role(&self, owner_id: Option<&UserId>, owner_email: &str) -> Option<PollRole> {
        if owner_id == Some(self.id) {
            return Some(PollRole::Organizer);
        }
        let email = self.verified_email()?;
        Some(if email == owner_email {
            PollRole::Organizer
        } else {
            PollRole::Participant
        })
    }

    /// Whether they may decide, close or delete the poll, and whether doing so makes the
    /// poll theirs.
    pub fn organizes(&self, owner_id: Option<&UserId>, owner_email: &str) -> Organizes {
        if owner_id == Some(self.id) {
            Organizes::AsOwner
        } else if self.verified_email().as_deref() == Some(owner_email) {
            Organizes::ByAddress
        } else {
            Organizes::No
        }
    }
}

/// Whether someone may act as a poll's organizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Organizes {
    /// They own it.
    AsOwner,
    /// They proved its address: they may, and the poll becomes theirs.
    ByAddress,
    /// They may not (403).
    No,
}

/// 403: someone other than the organizer tried to change the poll.
pub fn not_the_organizer() -> AppError {
    AppError::forbidden("Only the organizer can change this poll...")
}

/// 403: the address has answered already and the caller has not proved it.
pub fn identity_taken() -> AppError {
    AppError::forbidden("Sign in with the code sent to this email before changing its answers...")
}

/// A day of a poll, as the tallies read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Its id.
    pub id: PollSlotId,
    /// Start.
    pub start: DateTime<Utc>,
    /// End.
    pub end: DateTime<Utc>,
}

/// A participant, as the tallies read them (in the order the grid lists people).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// Their id.
    pub id: PollParticipantId,
    /// Their name.
    pub name: String,
    /// Their address (never shown; it finds the reader's own row).
    pub email: String,
}

/// One answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// Who gave it.
    pub participant: PollParticipantId,
    /// About which day.
    pub slot: PollSlotId,
    /// What they said.
    pub vote: Vote,
}

/// The grid a participant sees: people by name with their answers, who said what about each
/// day, and which row is the reader's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// Everyone, in order; their ids are poll-local (`"1"`, `"2"`, …).
    pub people: Vec<Person>,
    /// The index in `people` of the reader's row, if they have one.
    pub mine: Option<usize>,
    /// How many people answered at least one day.
    pub respondents: usize,
    /// Each day with the names of those who said yes, if needed and no.
    pub days: Vec<DayNames>,
}

/// A row of the grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// Poll-local id (`"1"`, `"2"`, …): never the participant's row id or address.
    pub id: String,
    /// Their name (`Guest` when blank).
    pub name: String,
    /// Their answers by day.
    pub answers: BTreeMap<PollSlotId, Vote>,
}

/// A day with who said what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayNames {
    /// The day.
    pub slot: Slot,
    /// Names that said yes, sorted.
    pub yes: Vec<String>,
    /// Names that said if needed, sorted.
    pub if_needed: Vec<String>,
    /// Names that said no, sorted.
    pub no: Vec<String>,
}

fn shown_name(name: &str) -> String {
    let name = name.trim();
    if name.is_empty() {
        NAMELESS.to_owned()
    } else {
        name.to_owned()
    }
}

fn sort_names(names: &mut [String]) {
    names.sort_by(|a, b| (a.to_lowercase(), a).cmp(&(b.to_lowercase(), b)));
}

/// The grid of a poll with `slots`, `participants` (in listing order) and `answers`;
/// `reader` is the address whose row is the reader's, if any.
pub fn grid(
    slots: &[Slot],
    participants: &[Participant],
    answers: &[Answer],
    reader: Option<&str>,
) -> Grid {
    let mut by_participant: HashMap<PollParticipantId, BTreeMap<PollSlotId, Vote>> = HashMap::new();
    for answer in answers {
        by_participant
            .entry(answer.participant)
            .or_default()
            .insert(answer.slot, answer.vote);
    }
    let people: Vec<Person> = participants
        .iter()
        .enumerate()
        .map(|(index, participant)| Person {
            id: (index + 1).to_string(),
            name: shown_name(&participant.name),
            answers: by_participant
                .get(&participant.id)
                .cloned()
                .unwrap_or_default(),
        })
        .collect();
    let mine = reader.and_then(|email| {
        participants
            .iter()
            .position(|participant| participant.email == email)
    });
    let respondents = people
        .iter()
        .filter(|person| !person.answers.is_empty())
        .count();
    let days = slots
        .iter()
        .map(|slot| {
            let mut day = DayNames {
                slot: *slot,
                yes: Vec::new(),
                if_needed: Vec::new(),
                no: Vec::new(),
            };
            for person in &people {
                match person.answers.get(&slot.id) {
                    Some(Vote::Yes) => day.yes.push(person.name.clone()),
                    Some(Vote::IfNeeded) => day.if_needed.push(person.name.clone()),
                    Some(Vote::No) => day.no.push(person.name.clone()),
                    None => {}
                }
            }
            sort_names(&mut day.yes);
            sort_names(&mut day.if_needed);
            sort_names(&mut day.no);
            day
        })
        .collect();
    Grid {
        people,
        mine,
        respondents,
        days,
    }
}

/// A day of the calendar layer: how many said yes, if needed and no.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayCount {
    /// The day.
    pub slot: Slot,
    /// How many said yes.
    pub yes: usize,
    /// How many said if needed.
    pub if_needed: usize,
    /// How many said no.
    pub no: usize,
}

/// The calendar layer's days of a poll: every day, or, once decided, the chosen one only.
pub fn day_counts(slots: &[Slot], answers: &[Answer], chosen: Option<PollSlotId>) -> Vec<DayCount> {
    slots
        .iter()
        .filter(|slot| chosen.is_none_or(|chosen| slot.id == chosen))
        .map(|slot| {
            let mut count = DayCount {
                slot: *slot,
                yes: 0,
                if_needed: 0,
                no: 0,
            };
            for answer in answers.iter().filter(|answer| answer.slot == slot.id) {
                match answer.vote {
                    Vote::Yes => count.yes += 1,
                    Vote::IfNeeded => count.if_needed += 1,
                    Vote::No => count.no += 1,
                }
            }
            count
        })
        .collect()
}

/// How many people gave at least one of `answers`.
pub fn respondents(answers: &[Answer]) -> usize {
    answers
        .iter()
        .map(|answer| answer.participant)
        .collect::<HashSet<_>>()
        .len()
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::domain::event_content::TEXT_LIMITS;

    #[test]
    fn titles_and_names_are_one_bounded_line() {
        assert_eq!(title(Some("  Lunch\r\nBcc: x  ")).unwrap(), "Lunch  Bcc: x");
        assert_eq!(
            title(Some(&"a".repeat(500))).unwrap().chars().count(),
            MAX_TITLE
        );
        assert!(title(Some(" \n ")).is_err());
        assert!(title(None).is_err());
        assert_eq!(person_name(Some(" Ann ")).unwrap(), "Ann");
        assert!(person_name(Some("")).is_err());
        assert!(TEXT_LIMITS.contains(&("description", MAX_DESCRIPTION)));
    }

    #[test]
    fn addresses_are_lower_case_and_single_line() {
        assert_eq!(
            email_identity(Some(" Ann@Example.COM ")).unwrap(),
            "ann@example.com"
        );
        for bad in [
            "ann@example.com\r\n",
            "ann@example.com\nBcc: x@y.z",
            "ann",
            "",
        ] {
            assert!(email_identity(Some(bad)).is_err(), "{bad:?}");
        }
        assert!(email_identity(None).is_err());
    }

    #[test]
    fn approximate_start_times_are_hours_and_minutes() {
        assert_eq!(
            approximate_start_time(Some("09:30")).unwrap().as_deref(),
            Some("09:30")
        );
        assert_eq!(
            approximate_start_time(Some("23:59")).unwrap().as_deref(),
            Some("23:59")
        );
        assert_eq!(approximate_start_time(Some(" ")).unwrap(), None);
        for bad in ["24:00", "9:30", "12:60", "ab:cd", "12:301"] {
            assert!(approximate_start_time(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_date_slot_is_noon_utc_and_every_slot_lasts_a_day() {
        let slot = slot_times(Some("2026-07-01"), Some("ignored")).unwrap();
        assert_eq!(slot.start.to_rfc3339(), "2026-07-01T12:00:00+00:00");
        assert_eq!(slot.end - slot.start, Duration::hours(24));
        let slot = slot_times(None, Some("2026-07-01T08:15:00+02:00")).unwrap();
        assert_eq!(slot.start.to_rfc3339(), "2026-07-01T06:15:00+00:00");
        for (date, start) in [
            (Some("2026-02-30"), None),
            (None, Some("soon")),
            (None, None),
            (Some("9999-12-31"), None),
        ] {
            assert!(slot_times(date, start).is_err(), "{date:?} {start:?}");
        }
    }

    #[test]
    fn ballots_name_each_offered_day_once() {
        let a = PollSlotId::generate();
        let b = PollSlotId::generate();
        let offered = [a, b];
        let (a_text, b_text) = (a.to_string(), b.to_string());
        let ok = ballot(
            [(a_text.as_str(), "yes"), (b_text.as_str(), "if-needed")].into_iter(),
            &offered,
        )
        .unwrap();
        assert_eq!(ok, vec![(a, Vote::Yes), (b, Vote::IfNeeded)]);
        let other = PollSlotId::generate().to_string();
        assert!(ballot([(other.as_str(), "yes")].into_iter(), &offered).is_err());
        assert!(ballot([(a_text.as_str(), "maybe")].into_iter(), &offered).is_err());
        assert!(
            ballot(
                [(a_text.as_str(), "yes"), (a_text.as_str(), "no")].into_iter(),
                &offered
            )
            .is_err()
        );
        let many = vec![(a_text.as_str(), "yes"); 3];
        assert!(ballot(many.into_iter(), &offered).is_err());
        assert!(ballot(std::iter::empty(), &offered).unwrap().is_empty());
    }

    #[test]
    fn the_grid_names_people_and_finds_the_reader() {
        let day = Slot {
            id: PollSlotId::generate(),
            start: Utc::now(),
            end: Utc::now(),
        };
        let people = [
            Participant {
                id: PollParticipantId::generate(),
                name: "zoe".into(),
                email: "z@example.com".into(),
            },
            Participant {
                id: PollParticipantId::generate(),
                name: " ".into(),
                email: "g@example.com".into(),
            },
            Participant {
                id: PollParticipantId::generate(),
                name: "Ann".into(),
                email: "a@example.com".into(),
            },
        ];
        let answers = [
            Answer {
                participant: people[0].id,
                slot: day.id,
                vote: Vote::Yes,
            },
            Answer {
                participant: people[2].id,
                slot: day.id,
                vote: Vote::Yes,
            },
        ];
        let grid = grid(&[day], &people, &answers, Some("g@example.com"));
        assert_eq!(grid.mine, Some(1));
        assert_eq!(grid.people[1].name, "Guest");
        assert_eq!(grid.people[1].id, "2");
        assert_eq!(grid.respondents, 2);
        assert_eq!(grid.days[0].yes, ["Ann", "zoe"]);
        let counts = day_counts(&[day], &answers, None);
        assert_eq!(counts[0].yes, 2);
        assert!(day_counts(&[day], &answers, Some(PollSlotId::generate())).is_empty());
        assert_eq!(respondents(&answers), 2);
    }

    #[test]
    fn the_decided_day_is_the_slots_utc_date() {
        let start = Utc.with_ymd_and_hms(2026, 7, 1, 23, 30, 0).unwrap();
        assert_eq!(decided_day(start).to_rfc3339(), "2026-07-01T00:00:00+00:00");
        assert_eq!(decided_when(start), "Wednesday 1 July 2026 at 23:30 UTC");
    }

    #[test]
    fn organizers_own_or_proved_the_address() {
        let me = UserId::new("me");
        let other = UserId::new("other");
        let verified = Viewer {
            id: &me,
            email: "Me@Example.com",
            email_verified: true,
            name: "Me",
        };
        assert_eq!(
            verified.organizes(Some(&me), "x@example.com"),
            Organizes::AsOwner
        );
        assert_eq!(
            verified.organizes(Some(&other), "me@example.com"),
            Organizes::ByAddress
        );
        assert_eq!(verified.organizes(None, "x@example.com"), Organizes::No);
        let unverified = Viewer {
            email_verified: false,
            ..verified
        };
        assert_eq!(unverified.organizes(None, "me@example.com"), Organizes::No);
        assert_eq!(unverified.role(None, "me@example.com"), None);
        assert_eq!(
            verified.role(None, "x@example.com"),
            Some(PollRole::Participant)
        );
    }
}
