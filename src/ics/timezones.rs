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

/// Windows zone id → IANA zone (CLDR's windowsZones.xml, the "001" territory of each).
const WINDOWS_ZONES: &[(&str, &str)] = &[
    ("Dateline Standard Time", "Etc/GMT+12"),
    ("UTC-11", "Etc/GMT+11"),
    ("Aleutian Standard Time", "America/Adak"),
    ("Hawaiian Standard Time", "Pacific/Honolulu"),
    ("Marquesas Standard Time", "Pacific/Marquesas"),
    ("Alaskan Standard Time", "America/Anchorage"),
    ("UTC-09", "Etc/GMT+9"),
    ("Pacific Standard Time (Mexico)", "America/Tijuana"),
    ("UTC-08", "Etc/GMT+8"),
    ("Pacific Standard Time", "America/Los_Angeles"),
    ("US Mountain Standard Time", "America/Phoenix"),
    ("Mountain Standard Time (Mexico)", "America/Mazatlan"),
    ("Mountain Standard Time", "America/Denver"),
    ("Yukon Standard Time", "America/Whitehorse"),
    ("Central America Standard Time", "America/Guatemala"),
    ("Central Standard Time", "America/Chicago"),
    ("Easter Island Standard Time", "Pacific/Easter"),
    ("Central Standard Time (Mexico)", "America/Mexico_City"),
    ("Mexico Standard Time", "America/Mexico_City"),
    ("Mexico Standard Time 2", "America/Chihuahua"),
    ("Canada Central Standard Time", "America/Regina"),
    ("SA Pacific Standard Time", "America/Bogota"),
    ("Eastern Standard Time (Mexico)", "America/Cancun"),
    ("Eastern Standard Time", "America/New_York"),
    ("Haiti Standard Time", "America/Port-au-Prince"),
    ("Cuba Standard Time", "America/Havana"),
    ("US Eastern Standard Time", "America/Indiana/Indianapolis"),
    ("Turks And Caicos Standard Time", "America/Grand_Turk"),
    ("Paraguay Standard Time", "America/Asuncion"),
    ("Atlantic Standard Time", "America/Halifax"),
    ("Venezuela Standard Time", "America/Caracas"),
    ("Central Brazilian Standard Time", "America/Cuiaba"),
    ("SA Western Standard Time", "America/La_Paz"),
    ("Pacific SA Standard Time", "America/Santiago"),
    ("Newfoundland Standard Time", "America/St_Johns"),
    ("Tocantins Standard Time", "America/Araguaina"),
    ("E. South America Standard Time", "America/Sao_Paulo"),
    ("SA Eastern Standard Time", "America/Cayenne"),
    ("Argentina Standard Time", "America/Argentina/Buenos_Aires"),
    ("Greenland Standard Time", "America/Nuuk"),
    ("Montevideo Standard Time", "America/Montevideo"),
    ("Magallanes Standard Time", "America/Punta_Arenas"),
    ("Saint Pierre Standard Time", "America/Miquelon"),
    ("Bahia Standard Time", "America/Bahia"),
    ("UTC-02", "Etc/GMT+2"),
    ("Mid-Atlantic Standard Time", "Etc/GMT+2"),
    ("Azores Standard Time", "Atlantic/Azores"),
    ("Cape Verde Standard Time", "Atlantic/Cape_Verde"),
    ("UTC", "Etc/UTC"),
    ("Coordinated Universal Time", "Etc/UTC"),
    ("GMT Standard Time", "Europe/London"),
    ("Greenwich Standard Time", "Atlantic/Reykjavik"),
    ("Sao Tome Standard Time", "Africa/Sao_Tome"),
    ("Morocco Standard Time", "Africa/Casablanca"),
    ("W. Europe Standard Time", "Europe/Berlin"),
    ("Central Europe Standard Time", "Europe/Budapest"),
    ("Romance Standard Time", "Europe/Paris"),
    ("Central European Standard Time", "Europe/Warsaw"),
    ("W. Central Africa Standard Time", "Africa/Lagos"),
    ("Jordan Standard Time", "Asia/Amman"),
    ("GTB Standard Time", "Europe/Bucharest"),
    ("Middle East Standard Time", "Asia/Beirut"),
    ("Egypt Standard Time", "Africa/Cairo"),
    ("E. Europe Standard Time", "Europe/Chisinau"),
    ("Syria Standard Time", "Asia/Damascus"),
    ("West Bank Standard Time", "Asia/Hebron"),
    ("South Africa Standard Time", "Africa/Johannesburg"),
    ("FLE Standard Time", "Europe/Kyiv"),
    ("Israel Standard Time", "Asia/Jerusalem"),
    ("South Sudan Standard Time", "Africa/Juba"),
    ("Kaliningrad Standard Time", "Europe/Kaliningrad"),
    ("Sudan Standard Time", "Africa/Khartoum"),
    ("Libya Standard Time", "Africa/Tripoli"),
    ("Namibia Standard Time", "Africa/Windhoek"),
    ("Arabic Standard Time", "Asia/Baghdad"),
    ("Turkey Standard Time", "Europe/Istanbul"),
    ("Arab Standard Time", "Asia/Riyadh"),
    ("Belarus Standard Time", "Europe/Minsk"),
    ("Russian Standard Time", "Europe/Moscow"),
    ("E. Africa Standard Time", "Africa/Nairobi"),
    ("Volgograd Standard Time", "Europe/Volgograd"),
    ("Iran Standard Time", "Asia/Tehran"),
    ("Arabian Standard Time", "Asia/Dubai"),
    ("Astrakhan Standard Time", "Europe/Astrakhan"),
    ("Azerbaijan Standard Time", "Asia/Baku"),
    ("Russia Time Zone 3", "Europe/Samara"),
    ("Mauritius Standard Time", "Indian/Mauritius"),
    ("Saratov Standard Time", "Europe/Saratov"),
    ("Georgian Standard Time", "Asia/Tbilisi"),
    ("Caucasus Standard Time", "Asia/Yerevan"),
    ("Armenian Standard Time", "Asia/Yerevan"),
    ("Afghanistan Standard Time", "Asia/Kabul"),
    ("West Asia Standard Time", "Asia/Tashkent"),
    ("Ekaterinburg Standard Time", "Asia/Yekaterinburg"),
    ("Pakistan Standard Time", "Asia/Karachi"),
    ("Qyzylorda Standard Time", "Asia/Qyzylorda"),
    ("India Standard Time", "Asia/Kolkata"),
    ("Sri Lanka Standard Time", "Asia/Colombo"),
    ("Nepal Standard Time", "Asia/Kathmandu"),
    ("Central Asia Standard Time", "Asia/Almaty"),
    ("Bangladesh Standard Time", "Asia/Dhaka"),
    ("Omsk Standard Time", "Asia/Omsk"),
    ("Myanmar Standard Time", "Asia/Yangon"),
    ("SE Asia Standard Time", "Asia/Bangkok"),
    ("Altai Standard Time", "Asia/Barnaul"),
    ("W. Mongolia Standard Time", "Asia/Hovd"),
    ("North Asia Standard Time", "Asia/Krasnoyarsk"),
    ("N. Central Asia Standard Time", "Asia/Novosibirsk"),
    ("Tomsk Standard Time", "Asia/Tomsk"),
    ("China Standard Time", "Asia/Shanghai"),
    ("North Asia East Standard Time", "Asia/Irkutsk"),
    ("Singapore Standard Time", "Asia/Singapore"),
    ("W. Australia Standard Time", "Australia/Perth"),
    ("Taipei Standard Time", "Asia/Taipei"),
    ("Ulaanbaatar Standard Time", "Asia/Ulaanbaatar"),
    ("Aus Central W. Standard Time", "Australia/Eucla"),
    ("Transbaikal Standard Time", "Asia/Chita"),
    ("Tokyo Standard Time", "Asia/Tokyo"),
    ("North Korea Standard Time", "Asia/Pyongyang"),
    ("Korea Standard Time", "Asia/Seoul"),
    ("Yakutsk Standard Time", "Asia/Yakutsk"),
    ("Cen. Australia Standard Time", "Australia/Adelaide"),
    ("AUS Central Standard Time", "Australia/Darwin"),
    ("E. Australia Standard Time", "Australia/Brisbane"),
    ("AUS Eastern Standard Time", "Australia/Sydney"),
    ("West Pacific Standard Time", "Pacific/Port_Moresby"),
    ("Tasmania Standard Time", "Australia/Hobart"),
    ("Vladivostok Standard Time", "Asia/Vladivostok"),
    ("Lord Howe Standard Time", "Australia/Lord_Howe"),
    ("Bougainville Standard Time", "Pacific/Bougainville"),
    ("Russia Time Zone 10", "Asia/Srednekolymsk"),
    ("Magadan Standard Time", "Asia/Magadan"),
    ("Norfolk Standard Time", "Pacific/Norfolk"),
    ("Sakhalin Standard Time", "Asia/Sakhalin"),
    ("Central Pacific Standard Time", "Pacific/Guadalcanal"),
    ("Russia Time Zone 11", "Asia/Kamchatka"),
    ("Kamchatka Standard Time", "Asia/Kamchatka"),
    ("New Zealand Standard Time", "Pacific/Auckland"),
    ("UTC+12", "Etc/GMT-12"),
    ("Fiji Standard Time", "Pacific/Fiji"),
    ("Chatham Islands Standard Time", "Pacific/Chatham"),
    ("UTC+13", "Etc/GMT-13"),
    ("Tonga Standard Time", "Pacific/Tongatapu"),
    ("Samoa Standard Time", "Pacific/Apia"),
    ("Line Islands Standard Time", "Pacific/Kiritimati"),
];

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
