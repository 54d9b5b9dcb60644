//! Scheduling polls with their days, participants and answers (`scheduling_*`). A poll's
//! days never change after it is made; its participants and their answers change only in a
//! transaction that first locks the poll row ([`lock`]), and deciding or closing it is one
//! conditional update of that row, so no answer lands on a poll already shut and no poll
//! is decided twice. Deleting a poll (or its owner's account) takes everything hanging off
//! it with it (the foreign keys cascade).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use entities::{
    scheduling_participants as participants, scheduling_polls as polls, scheduling_slots as slots,
    scheduling_votes as votes, user_settings, users,
};
use sea_orm::sea_query::{Expr, OnConflict, Query};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbErr,
    EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};
use serde_json::Value;

use super::statements::Unique;
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::domain::polls::{SlotTimes, Vote};
use ids::{PollId, PollParticipantId, PollSlotId};

/// A poll to store.
#[derive(Debug, Clone)]
pub struct NewPoll {
    /// The organizer's account, if they have one.
    pub owner_id: Option<UserId>,
    /// The organizer's address, lower case.
    pub owner_email: String,
    /// The organizer's name.
    pub owner_name: String,
    /// The question.
    pub title: String,
    /// More about it.
    pub description: Option<String>,
    /// The wall-clock hint.
    pub approximate_start_time: Option<String>,
    /// Always a day, for older clients.
    pub duration_minutes: i32,
    /// The public page's token.
    pub token: String,
    /// When it stops taking answers by itself.
    pub deadline: Option<DateTime<Utc>>,
    /// Where the decided event lands.
    pub calendar_id: Option<CalendarId>,
}

/// Stores a poll with its days (at least one); the poll's row.
pub async fn create(
    txn: &impl ConnectionTrait,
    new: NewPoll,
    days: &[SlotTimes],
    now: DateTime<Utc>,
) -> Result<polls::Model, DbErr> {
    let poll = polls::ActiveModel {
        id: Set(PollId::generate()),
        owner_id: Set(new.owner_id),
        owner_email: Set(new.owner_email),
        owner_name: Set(new.owner_name),
        title: Set(new.title),
        description: Set(new.description),
        approximate_start_time: Set(new.approximate_start_time),
        duration_minutes: Set(new.duration_minutes),
        token: Set(new.token),
        deadline: Set(new.deadline),
        calendar_id: Set(new.calendar_id),
        chosen_slot_id: Set(None),
        event_id: Set(None),
        closed_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await?;
    if !days.is_empty() {
        slots::Entity::insert_many(days.iter().map(|day| slots::ActiveModel {
            id: Set(PollSlotId::generate()),
            poll_id: Set(poll.id),
            start_at: Set(day.start),
            end_at: Set(day.end),
        }))
        .exec_without_returning(txn)
        .await?;
    }
    Ok(poll)
}

/// The poll with this id.
pub async fn find(db: &impl ConnectionTrait, id: PollId) -> Result<Option<polls::Model>, DbErr> {
    polls::Entity::find_by_id(id).unique(db).await
}

/// The poll whose public page has this token.
pub async fn find_by_token(
    db: &impl ConnectionTrait,
    token: &str,
) -> Result<Option<polls::Model>, DbErr> {
    polls::Entity::find()
        .filter(polls::Column::Token.eq(token))
        .unique(db)
        .await
}

/// Locks the poll's row for the rest of the transaction (`FOR UPDATE` on PostgreSQL;
/// SQLite's one writer holds the whole database) and returns it.
pub async fn lock(txn: &impl ConnectionTrait, id: PollId) -> Result<Option<polls::Model>, DbErr> {
    polls::Entity::find_by_id(id)
        .lock_exclusive()
        .unique(txn)
        .await
}

/// The polls `user_id` organizes: owned, or made with their proven address; newest first.
pub async fn organized_by(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    verified_email: Option<&str>,
) -> Result<Vec<polls::Model>, DbErr> {
    let mine = Condition::any()
        .add(polls::Column::OwnerId.eq(user_id))
        .add_option(verified_email.map(|email| polls::Column::OwnerEmail.eq(email)));
    polls::Entity::find()
        .filter(mine)
        .order_by_desc(polls::Column::CreatedAt)
        .order_by_desc(polls::Column::Id)
        .all(db)
        .await
}

/// The polls of `user_id`'s calendar layer, newest first: those they organize or took part
/// in (by account or proven address) that are decided, or still open at `now`.
pub async fn in_layer_of(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    verified_email: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Vec<polls::Model>, DbErr> {
    let took_part = Query::select()
        .column(participants::Column::PollId)
        .from(participants::Entity)
        .cond_where(
            Condition::any()
                .add(participants::Column::UserId.eq(user_id))
                .add_option(verified_email.map(|email| participants::Column::Email.eq(email))),
        )
        .to_owned();
    let theirs = Condition::any()
        .add(polls::Column::OwnerId.eq(user_id))
        .add_option(verified_email.map(|email| polls::Column::OwnerEmail.eq(email)))
        .add(polls::Column::Id.in_subquery(took_part));
    let shown = Condition::any()
        .add(polls::Column::ChosenSlotId.is_not_null())
        .add(
            Condition::all().add(polls::Column::ClosedAt.is_null()).add(
                Condition::any()
                    .add(polls::Column::Deadline.is_null())
                    .add(polls::Column::Deadline.gte(now)),
            ),
        );
    polls::Entity::find()
        .filter(theirs)
        .filter(shown)
        .order_by_desc(polls::Column::CreatedAt)
        .order_by_desc(polls::Column::Id)
        .all(db)
        .await
}

/// The days of `polls`, earliest first.
pub async fn slots_of(
    db: &impl ConnectionTrait,
    poll_ids: &[PollId],
) -> Result<Vec<slots::Model>, DbErr> {
    if poll_ids.is_empty() {
        return Ok(Vec::new());
    }
    slots::Entity::find()
        .filter(slots::Column::PollId.is_in(poll_ids.iter().copied()))
        .order_by_asc(slots::Column::StartAt)
        .order_by_asc(slots::Column::Id)
        .all(db)
        .await
}

/// The participants of `polls`, in the order they came.
pub async fn participants_of(
    db: &impl ConnectionTrait,
    poll_ids: &[PollId],
) -> Result<Vec<participants::Model>, DbErr> {
    if poll_ids.is_empty() {
        return Ok(Vec::new());
    }
    participants::Entity::find()
        .filter(participants::Column::PollId.is_in(poll_ids.iter().copied()))
        .order_by_asc(participants::Column::CreatedAt)
        .order_by_asc(participants::Column::Id)
        .all(db)
        .await
}

/// The answers given on `polls`.
pub async fn votes_of(
    db: &impl ConnectionTrait,
    poll_ids: &[PollId],
) -> Result<Vec<votes::Model>, DbErr> {
    if poll_ids.is_empty() {
        return Ok(Vec::new());
    }
    let on_polls = Query::select()
        .column(participants::Column::Id)
        .from(participants::Entity)
        .and_where(participants::Column::PollId.is_in(poll_ids.iter().copied()))
        .to_owned();
    votes::Entity::find()
        .filter(votes::Column::ParticipantId.in_subquery(on_polls))
        .all(db)
        .await
}

/// Makes the poll `user_id`'s (someone who proved its address claims it).
pub async fn set_owner(
    txn: &impl ConnectionTrait,
    id: PollId,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    polls::Entity::update_many()
        .col_expr(polls::Column::OwnerId, user_id.into())
        .col_expr(polls::Column::UpdatedAt, now.into())
        .filter(polls::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Decides the open poll for `slot` with the (not yet created) event `event`, closing it;
/// `false` when it was closed or decided already (or is gone).
pub async fn claim_decision(
    txn: &impl ConnectionTrait,
    id: PollId,
    slot: PollSlotId,
    event: EventId,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let claimed = polls::Entity::update_many()
        .col_expr(polls::Column::ChosenSlotId, slot.uuid().into())
        .col_expr(polls::Column::EventId, event.uuid().into())
        .col_expr(polls::Column::ClosedAt, now.into())
        .col_expr(polls::Column::UpdatedAt, now.into())
        .filter(polls::Column::Id.eq(id))
        .filter(polls::Column::ClosedAt.is_null())
        .exec(txn)
        .await?;
    Ok(claimed.rows_affected == 1)
}

/// Takes back a decision whose event could not be created: the poll is open again unless
/// something else decided it meanwhile (then `false`).
pub async fn release_decision(
    txn: &impl ConnectionTrait,
    id: PollId,
    event: EventId,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let released = polls::Entity::update_many()
        .col_expr(
            polls::Column::ChosenSlotId,
            Expr::value(Option::<uuid::Uuid>::None),
        )
        .col_expr(
            polls::Column::EventId,
            Expr::value(Option::<uuid::Uuid>::None),
        )
        .col_expr(
            polls::Column::ClosedAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(polls::Column::UpdatedAt, now.into())
        .filter(polls::Column::Id.eq(id))
        .filter(polls::Column::EventId.eq(event.uuid()))
        .exec(txn)
        .await?;
    Ok(released.rows_affected == 1)
}

/// Closes the open poll without a decision; `false` when it was closed or decided already.
pub async fn close(
    txn: &impl ConnectionTrait,
    id: PollId,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let closed = polls::Entity::update_many()
        .col_expr(polls::Column::ClosedAt, now.into())
        .col_expr(polls::Column::UpdatedAt, now.into())
        .filter(polls::Column::Id.eq(id))
        .filter(polls::Column::ClosedAt.is_null())
        .exec(txn)
        .await?;
    Ok(closed.rows_affected == 1)
}

/// Deletes the poll with its days, participants and answers; `false` if it was gone.
pub async fn delete(txn: &impl ConnectionTrait, id: PollId) -> Result<bool, DbErr> {
    let deleted = polls::Entity::delete_by_id(id).exec(txn).await?;
    Ok(deleted.rows_affected == 1)
}

/// The poll's participant with this address.
pub async fn participant_by_email(
    txn: &impl ConnectionTrait,
    poll: PollId,
    email: &str,
) -> Result<Option<participants::Model>, DbErr> {
    participants::Entity::find()
        .filter(participants::Column::PollId.eq(poll))
        .filter(participants::Column::Email.eq(email))
        .unique(txn)
        .await
}

/// A participant to store.
#[derive(Debug, Clone)]
pub struct NewParticipant {
    /// Their poll.
    pub poll_id: PollId,
    /// Their address, lower case.
    pub email: String,
    /// Their name.
    pub name: String,
    /// The account that proved the address, if one did.
    pub user_id: Option<UserId>,
}

/// Adds a participant unless the poll has one with that address already (then `None`,
/// and nothing changed: the transaction goes on).
pub async fn add_participant(
    txn: &impl ConnectionTrait,
    new: NewParticipant,
    now: DateTime<Utc>,
) -> Result<Option<PollParticipantId>, DbErr> {
    let id = PollParticipantId::generate();
    let row = participants::ActiveModel {
        id: Set(id),
        poll_id: Set(new.poll_id),
        user_id: Set(new.user_id),
        email: Set(new.email),
        name: Set(new.name),
        created_at: Set(now),
        updated_at: Set(now),
    };
    let inserted = participants::Entity::insert(row)
        .on_conflict_do_nothing_on([participants::Column::PollId, participants::Column::Email])
        .exec_without_returning(txn)
        .await?;
    Ok(matches!(inserted, sea_orm::TryInsertResult::Inserted(rows) if rows > 0).then_some(id))
}

/// Renames a participant and, when given, links them to the account that proved their
/// address.
pub async fn update_participant(
    txn: &impl ConnectionTrait,
    id: PollParticipantId,
    name: &str,
    user_id: Option<&UserId>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut update = participants::Entity::update_many()
        .col_expr(participants::Column::Name, name.into())
        .col_expr(participants::Column::UpdatedAt, now.into());
    if let Some(user_id) = user_id {
        update = update.col_expr(participants::Column::UserId, user_id.into());
    }
    update
        .filter(participants::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Makes someone signed in with a proven address a participant of the poll (without
/// answers), or links the participant with that address to their account; unless
/// `keep_name`, the name given (their account's) replaces the one shown.
pub async fn ensure_participant(
    txn: &impl ConnectionTrait,
    new: NewParticipant,
    keep_name: bool,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let row = participants::ActiveModel {
        id: Set(PollParticipantId::generate()),
        poll_id: Set(new.poll_id),
        user_id: Set(new.user_id),
        email: Set(new.email),
        name: Set(new.name),
        created_at: Set(now),
        updated_at: Set(now),
    };
    let mut refreshed = vec![
        participants::Column::UserId,
        participants::Column::UpdatedAt,
    ];
    if !keep_name {
        refreshed.push(participants::Column::Name);
    }
    participants::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([participants::Column::PollId, participants::Column::Email])
                .update_columns(refreshed)
                .to_owned(),
        )
        .exec_without_returning(txn)
        .await?;
    Ok(())
}

/// Replaces every answer of `participant` with `ballot`.
pub async fn replace_votes(
    txn: &impl ConnectionTrait,
    participant: PollParticipantId,
    ballot: &[(PollSlotId, Vote)],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    votes::Entity::delete_many()
        .filter(votes::Column::ParticipantId.eq(participant))
        .exec(txn)
        .await?;
    if ballot.is_empty() {
        return Ok(());
    }
    votes::Entity::insert_many(ballot.iter().map(|(slot, vote)| votes::ActiveModel {
        slot_id: Set(*slot),
        participant_id: Set(participant),
        value: Set(vote.as_str().to_owned()),
        created_at: Set(now),
    }))
    .exec_without_returning(txn)
    .await?;
    Ok(())
}

/// Someone to tell that a poll was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    /// Their address.
    pub email: String,
    /// Their name on the poll.
    pub name: String,
    /// Whether they want the mail: their account's `notificationEmails.pollDecided` (the
    /// account linked to the participant, else the one that proved the address); yes
    /// without an account, or without the setting.
    pub wants_mail: bool,
}

/// Everyone who took part in the poll, with whether they want to hear of its decision.
pub async fn recipients(db: &impl ConnectionTrait, poll: PollId) -> Result<Vec<Recipient>, DbErr> {
    let people = participants_of(db, &[poll]).await?;
    let unlinked: Vec<&str> = people
        .iter()
        .filter(|person| person.user_id.is_none())
        .map(|person| person.email.as_str())
        .collect();
    let mut account_of_address: HashMap<String, UserId> = HashMap::new();
    if !unlinked.is_empty() {
        for user in users::Entity::find()
            .filter(users::Column::Email.is_in(unlinked))
            .filter(users::Column::EmailVerified.eq(true))
            .all(db)
            .await?
        {
            account_of_address.insert(user.email.to_lowercase(), user.id);
        }
    }
    let account = |person: &participants::Model| {
        person
            .user_id
            .clone()
            .or_else(|| account_of_address.get(&person.email).cloned())
    };
    let accounts: HashSet<UserId> = people.iter().filter_map(account).collect();
    let mut declined: HashSet<UserId> = HashSet::new();
    if !accounts.is_empty() {
        for settings in user_settings::Entity::find()
            .filter(user_settings::Column::UserId.is_in(accounts))
            .all(db)
            .await?
        {
            let wanted = settings
                .value
                .pointer("/notificationEmails/pollDecided")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            if !wanted {
                declined.insert(settings.user_id);
            }
        }
    }
    Ok(people
        .iter()
        .map(|person| Recipient {
            email: person.email.clone(),
            name: person.name.clone(),
            wants_mail: account(person).is_none_or(|user| !declined.contains(&user)),
        })
        .collect())
}
