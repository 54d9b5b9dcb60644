//! The tool's own model of what the server acknowledged: every event with its home, links,
//! revision (or, on the original's wire, its acknowledged title writes) and title; every
//! acknowledged change with the frame it must produce and the users who must receive it (the
//! members of every calendar the event is linked to, before and after the change);
//! deletions with the users who saw them. Verification compares the server's reads and the
//! streams with this model.
//!
//! Writers serialize their own changes to one event through the event's lock: changes that
//! alter who sees it (link, delete) hold it exclusively, the others (update, attendance)
//! share it, so the recipients of every change are known exactly even though many writers
//! edit the same event and calendar at once.
//!
//! On Bowline's wire each change is known by the `revision` its answer carried. The
//! original's wire has none and its updates overwrite, so there each change is known by the
//! title its answer carried ([`Mark`]), and the title an event must end with is that of a
//! write no later acknowledged write followed ([`EventState::latest_titles`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::RwLock;
use uuid::Uuid;

use super::client::Reply;
use super::setup::Layout;
use super::sse::FrameKey;
use super::wire::Mark;

/// Writers pick among this many of a calendar's newest events, so that many of them edit
/// the same events at once.
pub const HOT_EVENTS: usize = 32;

/// An event as acknowledged.
#[derive(Debug, Clone)]
pub struct EventState {
    /// Linked calendars (indexes), home first.
    pub links: Vec<usize>,
    /// Highest acknowledged revision (`None` on the original's wire, which has none).
    pub revision: Option<i64>,
    /// Title at that revision (on the original's wire, of the write answered last).
    pub title: String,
    /// Deleted (acknowledged).
    pub deleted: bool,
    /// A request about it had no clear answer: left out of exact checks.
    pub tainted: bool,
    /// Every revision an acknowledged change answered with (Bowline's wire).
    pub revisions: Vec<i64>,
    /// Every acknowledged write of a title, with when it was sent and answered (the
    /// original's wire).
    pub writes: Vec<TitleWrite>,
    /// Serializes the tool's own changes that alter who sees it.
    pub lock: Arc<RwLock<()>>,
}

/// An acknowledged write of an event's title (a create or an update).
#[derive(Debug, Clone)]
pub struct TitleWrite {
    /// The title written.
    pub title: String,
    /// When it was sent and answered.
    pub at: Timing,
}

impl EventState {
    /// The titles the event may hold after its acknowledged writes when updates overwrite:
    /// those of the writes that no other acknowledged write was sent after the answer of
    /// (a write sent after another's answer reached the server after it was applied, and
    /// overwrote it; writes that overlap may have been applied in either order).
    pub fn latest_titles(&self) -> BTreeSet<&str> {
        let Some(last_sent) = self.writes.iter().map(|w| w.at.sent).max() else {
            return BTreeSet::new();
        };
        self.writes
            .iter()
            .filter(|w| w.at.answered >= last_sent)
            .map(|w| w.title.as_str())
            .collect()
    }
}

/// When the request of a change was sent and when its answer had arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Sent.
    pub sent: Instant,
    /// Answered.
    pub answered: Instant,
}

impl From<&Reply> for Timing {
    fn from(reply: &Reply) -> Self {
        Self {
            sent: reply.sent,
            answered: reply.done,
        }
    }
}

/// A frame every user in `users` must receive exactly once.
#[derive(Debug, Clone)]
pub struct ExpectedFrame {
    /// What it reports.
    pub key: FrameKey,
    /// Its recipients (user indexes).
    pub users: Vec<usize>,
    /// When the change was sent and answered.
    pub at: Timing,
}

/// What the writers' chosen event looked like when they took its lock.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Linked calendars (indexes).
    pub links: Vec<usize>,
    /// Revision (Bowline's wire).
    pub revision: Option<i64>,
}

/// The model.
#[derive(Debug)]
pub struct Model {
    layout: Arc<Layout>,
    events: HashMap<Uuid, EventState>,
    homed: Vec<Vec<Uuid>>,
    linked: Vec<Vec<Uuid>>,
    frames: Vec<ExpectedFrame>,
    deleted_for: HashMap<Uuid, Vec<usize>>,
    anomalies: Vec<String>,
    unknown: HashSet<Uuid>,
}

impl Model {
    /// An empty model over `layout`.
    pub fn new(layout: Arc<Layout>) -> Self {
        let calendars = layout.calendars.len();
        Self {
            layout,
            events: HashMap::new(),
            homed: vec![Vec::new(); calendars],
            linked: vec![Vec::new(); calendars],
            frames: Vec::new(),
            deleted_for: HashMap::new(),
            anomalies: Vec::new(),
            unknown: HashSet::new(),
        }
    }

    /// The calendars and memberships.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Every event.
    pub fn events(&self) -> &HashMap<Uuid, EventState> {
        &self.events
    }

    /// Every expected frame.
    pub fn frames(&self) -> &[ExpectedFrame] {
        &self.frames
    }

    /// Forgets the frames expected so far (the streams forgot what they had received: the
    /// end of the setup phase); the events stay.
    pub fn forget_frames(&mut self) {
        self.frames.clear();
    }

    /// Deleted events and the users who saw them then.
    pub fn deleted_for(&self) -> &HashMap<Uuid, Vec<usize>> {
        &self.deleted_for
    }

    /// Answers that contradict the model (an update applied over a revision its writer had
    /// not seen, a revision answered twice, a write answered with another title...).
    pub fn anomalies(&self) -> &[String] {
        &self.anomalies
    }

    /// Whether the server may or may not have created `id` (its answer was unclear).
    pub fn is_unknown(&self, id: &Uuid) -> bool {
        self.unknown.contains(id)
    }

    /// Users who see an event linked to `links`.
    pub fn readers(&self, links: &[usize]) -> Vec<usize> {
        let users: BTreeSet<usize> = links
            .iter()
            .flat_map(|c| self.layout.members(*c).iter().copied())
            .collect();
        users.into_iter().collect()
    }

    /// A hot event homed in `calendar` (`roll` chooses), with its lock.
    pub fn pick_homed(&mut self, calendar: usize, roll: u64) -> Option<(Uuid, Arc<RwLock<()>>)> {
        Self::pick(&self.events, self.homed.get_mut(calendar)?, roll)
    }

    /// A hot event linked into `calendar` (`roll` chooses), with its lock.
    pub fn pick_linked(&mut self, calendar: usize, roll: u64) -> Option<(Uuid, Arc<RwLock<()>>)> {
        Self::pick(&self.events, self.linked.get_mut(calendar)?, roll)
    }

    /// Picks among the newest `HOT_EVENTS` live events of `list`. Dead entries (deleted,
    /// tainted) leave the list only as the walk back from its end meets them, so a pick
    /// costs what the hot end holds, not every event the run has created (the walk used to
    /// cover the whole list, under the model's lock, at every pick).
    fn pick(
        events: &HashMap<Uuid, EventState>,
        list: &mut Vec<Uuid>,
        roll: u64,
    ) -> Option<(Uuid, Arc<RwLock<()>>)> {
        let live = |id: &Uuid| events.get(id).is_some_and(|e| !e.deleted && !e.tainted);
        let mut hot = 0;
        let mut at = list.len();
        while at > 0 && hot < HOT_EVENTS {
            at -= 1;
            if list.get(at).is_some_and(live) {
                hot += 1;
            } else {
                list.remove(at);
            }
        }
        let offset = usize::try_from(roll % u64::try_from(hot).ok()?.max(1)).ok()?;
        let id = *list.get(list.len().checked_sub(1 + offset)?)?;
        events.get(&id).map(|e| (id, e.lock.clone()))
    }

    /// The event as it stands, unless deleted or tainted.
    pub fn snapshot(&self, id: Uuid) -> Option<Snapshot> {
        let event = self.events.get(&id).filter(|e| !e.deleted && !e.tainted)?;
        Some(Snapshot {
            links: event.links.clone(),
            revision: event.revision,
        })
    }

    fn expect(&mut self, key: FrameKey, links: &[usize], at: Timing) {
        let users = self.readers(links);
        self.frames.push(ExpectedFrame { key, users, at });
    }

    /// A create of `title` acknowledged with `mark`.
    pub fn created(&mut self, id: Uuid, home: usize, title: String, mark: Mark, at: Timing) {
        let mut event = EventState {
            links: vec![home],
            revision: None,
            title: title.clone(),
            deleted: false,
            tainted: false,
            revisions: Vec::new(),
            writes: Vec::new(),
            lock: Arc::new(RwLock::new(())),
        };
        match &mark {
            Mark::Revision(revision) => {
                if *revision != 1 {
                    self.anomalies.push(format!(
                        "event {id} was created at revision {revision}, not 1"
                    ));
                }
                event.revision = Some(*revision);
                event.revisions.push(*revision);
            }
            Mark::Title(answered) => {
                if *answered != title {
                    self.anomalies.push(format!(
                        "event {id} was created as \"{title}\" and answered \"{answered}\""
                    ));
                }
                event.writes.push(TitleWrite { title, at });
            }
        }
        self.events.insert(id, event);
        if let Some(list) = self.homed.get_mut(home) {
            list.push(id);
        }
        if let Some(list) = self.linked.get_mut(home) {
            list.push(id);
        }
        self.expect(FrameKey::Created(id, mark), &[home], at);
    }

    /// An update of `title`, sent with the revision `base` (Bowline's wire), acknowledged
    /// with `mark`.
    pub fn updated(&mut self, id: Uuid, base: Option<i64>, title: String, mark: Mark, at: Timing) {
        let Some(event) = self.events.get_mut(&id) else {
            return;
        };
        match &mark {
            Mark::Revision(revision) => {
                if base.is_none_or(|base| *revision != base + 1) {
                    self.anomalies.push(format!(
                        "event {id}: an update based on revision {base:?} was applied as \
                         revision {revision}, overwriting a change its writer had not seen \
                         (a lost update)"
                    ));
                }
                event.revisions.push(*revision);
                if event.revision.is_none_or(|current| *revision > current) {
                    event.revision = Some(*revision);
                    event.title = title;
                }
            }
            Mark::Title(answered) => {
                if *answered != title {
                    self.anomalies.push(format!(
                        "event {id}: an update to \"{title}\" was answered \"{answered}\""
                    ));
                }
                event.title = title.clone();
                event.writes.push(TitleWrite { title, at });
            }
        }
        let links = event.links.clone();
        self.expect(FrameKey::Updated(id, mark), &links, at);
    }

    /// A link into `target` acknowledged with `mark`.
    pub fn linked(&mut self, id: Uuid, target: usize, mark: Mark, at: Timing) {
        let Some(event) = self.events.get_mut(&id) else {
            return;
        };
        match &mark {
            Mark::Revision(revision) => {
                if event
                    .revision
                    .is_none_or(|current| *revision != current + 1)
                {
                    self.anomalies.push(format!(
                        "event {id}: a link at revision {:?} answered revision {revision}",
                        event.revision
                    ));
                }
                event.revisions.push(*revision);
                event.revision = event.revision.max(Some(*revision));
            }
            Mark::Title(answered) => {
                // The link holds the event's lock exclusively: every write to it was
                // answered, so the event holds the title of one that nothing followed.
                if !event.latest_titles().contains(answered.as_str()) {
                    self.anomalies.push(format!(
                        "event {id}: a link answered \"{answered}\", which no acknowledged \
                         write left last"
                    ));
                }
            }
        }
        event.links.push(target);
        let links = event.links.clone();
        if let Some(list) = self.linked.get_mut(target) {
            list.push(id);
        }
        self.expect(FrameKey::Updated(id, mark), &links, at);
    }

    /// An attendance answer acknowledged with the attendee list `attendees` (JSON text).
    pub fn attendance(&mut self, id: Uuid, attendees: String, at: Timing) {
        let Some(links) = self.events.get(&id).map(|e| e.links.clone()) else {
            return;
        };
        self.expect(FrameKey::Attendance(id, attendees), &links, at);
    }

    /// A delete acknowledged (`removed: true`).
    pub fn deleted(&mut self, id: Uuid, at: Timing) {
        let Some(event) = self.events.get_mut(&id) else {
            return;
        };
        event.deleted = true;
        let links = event.links.clone();
        let readers = self.readers(&links);
        self.deleted_for.insert(id, readers);
        self.expect(FrameKey::Removed(id), &links, at);
    }

    /// A request about `id` had no clear answer: it may or may not have been applied.
    pub fn taint(&mut self, id: Uuid) {
        if let Some(event) = self.events.get_mut(&id) {
            event.tainted = true;
        } else {
            self.unknown.insert(id);
        }
    }

    /// Whether the frame `key` is about an event the exact checks leave out.
    pub fn is_uncertain(&self, key: &FrameKey) -> bool {
        key.event().is_some_and(|id| {
            self.unknown.contains(&id) || self.events.get(&id).is_some_and(|e| e.tainted)
        })
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::setup::Sharing;

    fn model() -> Model {
        let mut layout = Layout::plan(4, 2, Sharing::Spread);
        layout.calendars = vec![Uuid::new_v4(), Uuid::new_v4()];
        Model::new(Arc::new(layout))
    }

    fn now() -> Timing {
        Timing {
            sent: Instant::now(),
            answered: Instant::now(),
        }
    }

    fn title(text: &str) -> Mark {
        Mark::Title(text.into())
    }

    #[test]
    fn changes_expect_frames_for_the_readers_of_every_linked_calendar() {
        let mut model = model();
        let id = Uuid::new_v4();
        model.created(id, 0, "a".into(), Mark::Revision(1), now());
        model.updated(id, Some(1), "b".into(), Mark::Revision(2), now());
        model.linked(id, 1, Mark::Revision(3), now());
        model.deleted(id, now());
        let keys: Vec<_> = model.frames().iter().map(|f| f.key.clone()).collect();
        assert_eq!(
            keys,
            vec![
                FrameKey::Created(id, Mark::Revision(1)),
                FrameKey::Updated(id, Mark::Revision(2)),
                FrameKey::Updated(id, Mark::Revision(3)),
                FrameKey::Removed(id)
            ]
        );
        let members = |c| model.layout().members(c).to_vec();
        assert_eq!(model.frames()[0].users, members(0));
        assert_eq!(model.frames()[2].users, model.readers(&[0, 1]));
        assert_eq!(model.deleted_for()[&id], model.readers(&[0, 1]));
        assert!(model.anomalies().is_empty());
        assert!(
            model.pick_homed(0, 0).is_none(),
            "deleted events are not picked"
        );
    }

    #[test]
    fn writers_pick_among_the_newest_live_events_of_a_calendar() {
        let mut model = model();
        let ids: Vec<Uuid> = (0..HOT_EVENTS + 8).map(|_| Uuid::new_v4()).collect();
        for id in &ids {
            model.created(*id, 0, "a".into(), Mark::Revision(1), now());
        }
        // The newest two and one in the middle of the hot end go.
        let newest = ids.len() - 1;
        for gone in [newest, newest - 1, newest - 10] {
            model.deleted(ids[gone], now());
        }
        model.taint(ids[newest - 2]);
        let live: Vec<Uuid> = ids[..newest - 2]
            .iter()
            .copied()
            .filter(|id| *id != ids[newest - 10])
            .collect();
        let hot: BTreeSet<Uuid> = live[live.len() - HOT_EVENTS..].iter().copied().collect();
        let picked: BTreeSet<Uuid> = (0..2 * HOT_EVENTS as u64)
            .filter_map(|roll| model.pick_homed(0, roll).map(|(id, _)| id))
            .collect();
        assert_eq!(picked, hot);
    }

    #[test]
    fn an_update_applied_over_an_unseen_revision_is_an_anomaly() {
        let mut model = model();
        let id = Uuid::new_v4();
        model.created(id, 0, "a".into(), Mark::Revision(1), now());
        model.updated(id, Some(1), "b".into(), Mark::Revision(2), now());
        model.updated(id, Some(1), "c".into(), Mark::Revision(3), now());
        assert_eq!(model.anomalies().len(), 1);
        assert_eq!(model.events()[&id].title, "c");
        assert_eq!(model.events()[&id].revision, Some(3));
    }

    #[test]
    fn without_revisions_the_last_title_is_one_that_no_later_write_followed() {
        let mut model = model();
        let id = Uuid::new_v4();
        let start = Instant::now();
        let at = |sent: u64, answered: u64| Timing {
            sent: start + Duration::from_millis(sent),
            answered: start + Duration::from_millis(answered),
        };
        model.created(id, 0, "a".into(), title("a"), at(0, 1));
        // "b" and "c" overlap, so either may have been applied last.
        model.updated(id, None, "b".into(), title("b"), at(2, 6));
        model.updated(id, None, "c".into(), title("c"), at(3, 5));
        let event = &model.events()[&id];
        assert_eq!(event.latest_titles(), BTreeSet::from(["b", "c"]));
        assert_eq!(event.revision, None);
        // A link answered with either is fine; with "a" (overwritten by both) it is not.
        model.linked(id, 1, title("c"), at(7, 8));
        assert!(model.anomalies().is_empty());
        model.linked(id, 1, title("a"), at(9, 10));
        assert_eq!(model.anomalies().len(), 1, "{:?}", model.anomalies());
        // "d" was sent after both answers: it alone is last.
        model.updated(id, None, "d".into(), title("d"), at(11, 12));
        assert_eq!(model.events()[&id].latest_titles(), BTreeSet::from(["d"]));
        // An update answered with something else than it wrote is an anomaly too.
        model.updated(id, None, "e".into(), title("x"), at(13, 14));
        assert_eq!(model.anomalies().len(), 2);
        assert_eq!(
            model.frames()[1].key,
            FrameKey::Updated(id, title("b")),
            "frames are told apart by the title their answer carried"
        );
    }
}
