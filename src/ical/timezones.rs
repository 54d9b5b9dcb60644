//! Time-zone resolution for imports: which zone a `TZID` means, and the UTC instant of a
//! DATE-TIME value.
//!
//! A TZID is resolved, in this order, to:
//! 1. an IANA name (`Europe/Berlin`, any case, also inside Mozilla's
//!    `/mozilla.org/…/Europe/Berlin` and with `-` for `/` as in `US-Eastern`). The IANA
//!    database wins over the file's VTIMEZONE of the same name, whose rules are often
//!    wrong in real files (Apple writes `Europe/Moscow` as +02:30:17, khal's fixtures carry an
//!    impossible +53:28) and usually cover only the current rules;
//! 2. a Windows zone name (`W. Europe Standard Time`), mapped with CLDR's table;
//! 3. the file's VTIMEZONE with that TZID (its `X-LIC-LOCATION` if that is an IANA name,
//!    else its own STANDARD/DAYLIGHT rules): Outlook's display names such as
//!    `(UTC-03:00) Brasília` or `Canberra, Melbourne, Sydney`;
//! 4. otherwise (empty or unknown TZID, no VTIMEZONE) the time is treated as floating.
//!
//! Floating times are read in the calendar's `X-WR-TIMEZONE` when it names a zone, else in
//! the importing user's settings time zone. A local time that falls in a DST gap uses the
//! offset before the gap (RFC 5545 3.3.5); an ambiguous one takes the first occurrence.

use std::collections::HashMap;
use std::str::FromStr;

use chrono::{DateTime, Duration, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;

use super::values::DateValue;
use super::vtimezone::Definition;
use super::windows_zones::WINDOWS_ZONES;

/// What a TZID turned out to mean.
#[derive(Debug, Clone)]
pub enum Zone {
    /// A zone of the time-zone database.
    Named(Tz),
    /// A VTIMEZONE of the file, evaluated by its own rules.
    Defined(Definition),
    /// Nothing known: read as floating.
    Floating,
}

/// Resolves TZIDs for one file (the resolution of each TZID is cached).
#[derive(Debug)]
pub struct ZoneResolver {
    definitions: HashMap<String, Definition>,
    locations: HashMap<String, String>,
    floating: Tz,
    cache: HashMap<String, Zone>,
}

impl ZoneResolver {
    /// A resolver knowing the file's VTIMEZONEs (TZID → definition, TZID →
    /// `X-LIC-LOCATION`) that reads floating times in `floating`.
    pub fn new(
        definitions: HashMap<String, Definition>,
        locations: HashMap<String, String>,
        floating: Tz,
    ) -> Self {
        Self {
            definitions,
            locations,
            floating,
            cache: HashMap::new(),
        }
    }

    /// The zone floating times are read in.
    pub fn floating(&self) -> Tz {
        self.floating
    }

    /// The zone `tzid` means (see the module doc).
    pub fn zone(&mut self, tzid: &str) -> Zone {
        if let Some(zone) = self.cache.get(tzid) {
            return zone.clone();
        }
        let zone = self.resolve(tzid);
        self.cache.insert(tzid.to_owned(), zone.clone());
        zone
    }

    fn resolve(&self, tzid: &str) -> Zone {
        let name = clean_tzid(tzid);
        if name.is_empty() {
            return Zone::Floating;
        }
        if let Some(tz) = named_zone(&name) {
            return Zone::Named(tz);
        }
        let key = self.definition_key(&name);
        if let Some(tz) = key
            .and_then(|key| self.locations.get(key))
            .and_then(|location| named_zone(location))
        {
            return Zone::Named(tz);
        }
        match key.and_then(|key| self.definitions.get(key)) {
            Some(definition) if definition.is_usable() => Zone::Defined(definition.clone()),
            _ => Zone::Floating,
        }
    }

    fn definition_key(&self, name: &str) -> Option<&str> {
        self.definitions
            .keys()
            .chain(self.locations.keys())
            .find(|key| key.as_str() == name || key.eq_ignore_ascii_case(name))
            .map(String::as_str)
    }

    /// The UTC instant of a DATE-TIME `value` with an optional TZID (a DATE is read as its
    /// midnight in the zone).
    pub fn instant(&mut self, value: DateValue, tzid: Option<&str>) -> DateTime<Utc> {
        let local = match value {
            DateValue::Utc(at) => return Utc.from_utc_datetime(&at),
            DateValue::Local(at) => at,
            DateValue::Date(date) => date.and_time(chrono::NaiveTime::MIN),
        };
        let zone = match tzid {
            Some(tzid) => self.zone(tzid),
            None => Zone::Floating,
        };
        match zone {
            Zone::Named(tz) => local_in(tz, local),
            Zone::Defined(definition) => {
                let offset = definition.offset_at(local);
                Utc.from_utc_datetime(&(local - Duration::seconds(i64::from(offset))))
            }
            Zone::Floating => local_in(self.floating, local),
        }
    }

    /// The IANA zone a TZID names, if it names one (for expanding recurrences).
    pub fn named(&mut self, tzid: Option<&str>) -> Option<Tz> {
        match tzid.map(|tzid| self.zone(tzid)) {
            Some(Zone::Named(tz)) => Some(tz),
            None | Some(Zone::Floating) => Some(self.floating),
            Some(Zone::Defined(_)) => None,
        }
    }
}

/// `local` in `tz` as a UTC instant (gap: the offset before it; ambiguous: the earlier).
pub fn local_in(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match tz.from_local_datetime(&local) {
        chrono::LocalResult::Single(at) => at.with_timezone(&Utc),
        chrono::LocalResult::Ambiguous(first, _) => first.with_timezone(&Utc),
        chrono::LocalResult::None => {
            let before = tz
                .offset_from_utc_datetime(&(local - Duration::days(1)))
                .fix();
            Utc.from_utc_datetime(&(local - Duration::seconds(i64::from(before.local_minus_utc()))))
        }
    }
}

/// A TZID as written, unescaped (`Kuala Lumpur\, Singapore`) and trimmed.
pub fn clean_tzid(tzid: &str) -> String {
    tzid.replace("\\,", ",")
        .replace("\\;", ";")
        .trim()
        .trim_matches('"')
        .trim()
        .to_owned()
}

/// The database zone `name` means: an IANA name (any case; a Mozilla-style path ending in
/// one; `-` written for `/`) or a Windows zone name.
pub fn named_zone(name: &str) -> Option<Tz> {
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    let iana = |candidate: &str| {
        Tz::from_str(candidate).ok().or_else(|| {
            chrono_tz::TZ_VARIANTS
                .iter()
                .find(|tz| tz.name().eq_ignore_ascii_case(candidate))
                .copied()
        })
    };
    if let Some(tz) = iana(name) {
        return Some(tz);
    }
    if let Some(tz) = windows_zone(name).and_then(iana) {
        return Some(tz);
    }
    if name.contains('/') {
        // `/mozilla.org/20050126_1/America/New_York`, `/softwarestudio.org/…/Europe/Paris`
        let suffix = name
            .match_indices('/')
            .map(|(at, _)| &name[at + 1..])
            .find_map(&iana);
        if suffix.is_some() {
            return suffix;
        }
    }
    if let Some((area, place)) = name.split_once('-') {
        return iana(&format!("{area}/{place}"));
    }
    None
}

/// The IANA zone of a Windows zone name (CLDR `windowsZones`, territory 001).
pub fn windows_zone(name: &str) -> Option<&'static str> {
    WINDOWS_ZONES
        .iter()
        .find(|(windows, _)| windows.eq_ignore_ascii_case(name))
        .map(|(_, iana)| *iana)
}
#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use chrono::NaiveDate;

    use super::*;

    #[test]
    fn every_windows_zone_maps_to_a_known_iana_zone() {
        for (windows, iana) in WINDOWS_ZONES {
            assert!(Tz::from_str(iana).is_ok(), "{windows} → {iana}");
        }
    }

    #[test]
    fn names_resolve_in_order() {
        assert_eq!(named_zone("Europe/Berlin"), Some(Tz::Europe__Berlin));
        assert_eq!(named_zone("europe/berlin"), Some(Tz::Europe__Berlin));
        assert_eq!(
            named_zone("W. Europe Standard Time"),
            Some(Tz::Europe__Berlin)
        );
        assert_eq!(
            named_zone("/mozilla.org/20050126_1/America/New_York"),
            Some(Tz::America__New_York)
        );
        assert_eq!(named_zone("US-Eastern"), Some(Tz::US__Eastern));
        assert_eq!(named_zone("FOO"), None);
        assert_eq!(
            clean_tzid("Kuala Lumpur\\, Singapore"),
            "Kuala Lumpur, Singapore"
        );
    }

    #[test]
    fn gaps_and_folds() {
        let local = |h, m| {
            NaiveDate::from_ymd_opt(2026, 3, 29)
                .unwrap()
                .and_hms_opt(h, m, 0)
                .unwrap()
        };
        // 02:30 does not exist in Berlin that night: read with the offset before (+01:00).
        assert_eq!(
            local_in(Tz::Europe__Berlin, local(2, 30)).to_rfc3339(),
            "2026-03-29T01:30:00+00:00"
        );
        assert_eq!(
            local_in(Tz::Europe__Berlin, local(12, 0)).to_rfc3339(),
            "2026-03-29T10:00:00+00:00"
        );
    }
}
