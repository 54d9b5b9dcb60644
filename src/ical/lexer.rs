//! The tolerant reader: raw bytes → a tree of components with their properties, each
//! property remembering the line it started on.
//!
//! It accepts what real producers write rather than what RFC 5545 allows: a UTF-8 byte-order
//! mark, invalid UTF-8 (replaced), CRLF, LF or lone CR line ends, blank lines anywhere (also
//! between a folded line and its continuation), folds with a space or a TAB (also in the
//! middle of a name, before `;` or `:` and straight after `:`), names in any case, empty or
//! value-less parameters, stray lines without a colon (ignored), several VCALENDARs in one
//! file and bare components with no VCALENDAR around them. Control characters other than
//! TAB, LF and CR are dropped from the text before anything is read (a NUL could not be
//! stored in PostgreSQL, and none belongs in a calendar). What it refuses, naming the line:
//! a file with no component at all, an `END` that does not close the open component,
//! components nested more than [`MAX_DEPTH`] deep (real files nest 3: VCALENDAR, VEVENT,
//! VALARM; a deep tree would only cost stack), and a file that ends inside a component (a
//! truncated download).

use std::borrow::Cow;

use super::{IcsError, MAX_EVENTS};

/// Deepest nesting of components accepted.
pub const MAX_DEPTH: usize = 16;

/// One property (content line) after unfolding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// Upper-case name (`DTSTART`).
    pub name: String,
    /// Parameters in order: upper-case name and its values (quotes removed).
    pub params: Vec<(String, Vec<String>)>,
    /// The raw value (not unescaped).
    pub value: String,
    /// 1-based line of the file the property starts on.
    pub line: usize,
}

impl Property {
    /// The first value of parameter `name` (upper case), if present and not empty.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .and_then(|(_, values)| values.first())
            .map(String::as_str)
            .filter(|value| !value.trim().is_empty())
    }
}

/// A component (`VEVENT`, `VTIMEZONE`, `STANDARD`…) with its properties and children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Component {
    /// Upper-case name.
    pub name: String,
    /// Properties in file order (repeated ones kept).
    pub properties: Vec<Property>,
    /// Nested components.
    pub children: Vec<Component>,
    /// 1-based line of its `BEGIN`.
    pub line: usize,
}

impl Component {
    /// The first property called `name`.
    pub fn first(&self, name: &str) -> Option<&Property> {
        self.properties.iter().find(|p| p.name == name)
    }

    /// Every property called `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Property> + 'a {
        self.properties.iter().filter(move |p| p.name == name)
    }
}

/// Reads `bytes` into its top-level components (VCALENDARs, or bare VEVENTs…).
pub fn read(bytes: &[u8]) -> Result<Vec<Component>, IcsError> {
    let text = decode(bytes);
    let mut stack: Vec<Component> = Vec::new();
    let mut top: Vec<Component> = Vec::new();
    let mut events = 0usize;
    for (line, logical) in logical_lines(&text) {
        let Some(property) = parse_content_line(&logical, line) else {
            continue; // a stray line without a colon: nothing to read in it
        };
        match property.name.as_str() {
            "BEGIN" => {
                let name = property.value.trim().to_ascii_uppercase();
                if stack.len() >= MAX_DEPTH {
                    return Err(IcsError::at(
                        line,
                        format!("BEGIN:{name} nests components more than {MAX_DEPTH} deep"),
                    ));
                }
                if name == "VEVENT" {
                    events += 1;
                    if events > MAX_EVENTS {
                        return Err(IcsError::TooManyEvents);
                    }
                }
                stack.push(Component {
                    name,
                    line,
                    ..Component::default()
                });
            }
            "END" => {
                let name = property.value.trim().to_ascii_uppercase();
                let Some(open) = stack.pop() else {
                    return Err(IcsError::at(
                        line,
                        format!("END:{name} without a matching BEGIN"),
                    ));
                };
                if open.name != name {
                    return Err(IcsError::at(
                        line,
                        format!(
                            "END:{name} while BEGIN:{} (line {}) is still open",
                            open.name, open.line
                        ),
                    ));
                }
                match stack.last_mut() {
                    Some(parent) => parent.children.push(open),
                    None => top.push(open),
                }
            }
            _ => {
                // Properties outside any component (junk before BEGIN:VCALENDAR) are ignored.
                if let Some(current) = stack.last_mut() {
                    current.properties.push(property);
                }
            }
        }
    }
    if let Some(open) = stack.last() {
        let last_line = text.lines().count().max(1);
        return Err(IcsError::at(
            last_line,
            format!(
                "the file ends before END:{} (BEGIN at line {}); it looks truncated",
                open.name, open.line
            ),
        ));
    }
    if top.is_empty() {
        return Err(IcsError::at(1, "no BEGIN:VCALENDAR or BEGIN:VEVENT found"));
    }
    Ok(top)
}

/// The text of the file: without a byte-order mark, invalid UTF-8 replaced, control
/// characters other than TAB, LF and CR dropped.
fn decode(bytes: &[u8]) -> Cow<'_, str> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    if text.contains(is_dropped_control) {
        Cow::Owned(text.chars().filter(|c| !is_dropped_control(*c)).collect())
    } else {
        text
    }
}

fn is_dropped_control(c: char) -> bool {
    c.is_ascii_control() && !matches!(c, '\t' | '\n' | '\r')
}

/// Unfolded logical lines with the 1-based number of the physical line each starts on.
/// Blank lines are dropped, so a continuation after a blank line still continues.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines: Vec<(usize, String)> = Vec::new();
    for (index, physical) in physical_lines(text).enumerate() {
        if physical.trim().is_empty() && !is_continuation(physical) {
            continue;
        }
        match (is_continuation(physical), lines.last_mut()) {
            (true, Some((_, current))) => current.push_str(&physical[1..]),
            _ => lines.push((index + 1, physical.to_owned())),
        }
    }
    lines
}

fn is_continuation(line: &str) -> bool {
    line.starts_with(' ') || line.starts_with('\t')
}

/// Physical lines split at CRLF, LF or a lone CR.
fn physical_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.find(['\r', '\n']).unwrap_or(rest.len());
        let line = &rest[..end];
        let after = &rest[end..];
        rest = if let Some(stripped) = after.strip_prefix("\r\n") {
            stripped
        } else if after.is_empty() {
            after
        } else {
            &after[1..]
        };
        Some(line)
    })
}

/// Parses `name *(";" param) ":" value`; `None` for a line without a colon.
fn parse_content_line(line: &str, number: usize) -> Option<Property> {
    let bytes = line.as_bytes();
    let name_end = line.find([';', ':'])?;
    let name = line[..name_end].trim().to_ascii_uppercase();
    if name.is_empty() {
        return None;
    }
    let mut params = Vec::new();
    let mut pos = name_end;
    while bytes.get(pos) == Some(&b';') {
        pos += 1;
        let (param, next) = parse_param(line, pos);
        if let Some(param) = param {
            params.push(param);
        }
        pos = next;
    }
    // `pos` is at the ':' (or the end of a line whose value is missing).
    let value = line.get(pos + 1..).unwrap_or_default().to_owned();
    if bytes.get(pos) != Some(&b':') {
        return None;
    }
    Some(Property {
        name,
        params,
        value,
        line: number,
    })
}

/// One parameter starting at `start`; returns it (if it has a name) and where the next `;`
/// or the `:` is. Quoted values may hold `;`, `:` and `,`.
fn parse_param(line: &str, start: usize) -> (Option<(String, Vec<String>)>, usize) {
    let bytes = line.as_bytes();
    let mut pos = start;
    while pos < bytes.len() && !matches!(bytes[pos], b'=' | b';' | b':') {
        pos += 1;
    }
    let name = line[start..pos].trim().to_ascii_uppercase();
    if bytes.get(pos) != Some(&b'=') {
        return (None, pos); // `;;` or a value-less parameter
    }
    pos += 1;
    let mut values = Vec::new();
    loop {
        let mut value = String::new();
        if bytes.get(pos) == Some(&b'"') {
            let close = line[pos + 1..].find('"').map(|i| pos + 1 + i);
            match close {
                Some(close) => {
                    value.push_str(&line[pos + 1..close]);
                    pos = close + 1;
                }
                None => {
                    // An unterminated quote: take up to the last ':' as the value.
                    let colon = line.rfind(':').filter(|&c| c > pos).unwrap_or(line.len());
                    value.push_str(&line[pos + 1..colon]);
                    pos = colon;
                }
            }
        }
        let run_start = pos;
        while pos < bytes.len() && !matches!(bytes[pos], b',' | b';' | b':') {
            // `\;` and `\,` in unquoted values (Apple) stay part of the value.
            if bytes[pos] == b'\\' && matches!(bytes.get(pos + 1), Some(b';' | b',')) {
                pos += 1;
            }
            pos += 1;
        }
        value.push_str(&line[run_start..pos]);
        values.push(value);
        if bytes.get(pos) == Some(&b',') {
            pos += 1;
            continue;
        }
        break;
    }
    let params = if name.is_empty() {
        None
    } else {
        Some((name, values))
    };
    (params, pos)
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn unfolds_tolerantly_and_remembers_lines() {
        let text = "\u{feff}BEGIN:VCALENDAR\nVERSION\n\n :2.0\r\nbegin:vevent\r\nSUMMARY:Caf\r\n \u{e9} time\r\nDTSTART\n ;TZID=US-Eastern\n :19970805T090000\nX\nend:VEVENT\rEND:VCALENDAR";
        let top = read(text.as_bytes()).expect("reads");
        assert_eq!(top.len(), 1);
        let calendar = &top[0];
        assert_eq!(calendar.first("VERSION").expect("version").value, "2.0");
        let event = &calendar.children[0];
        assert_eq!(event.name, "VEVENT");
        assert_eq!(event.line, 5);
        assert_eq!(event.first("SUMMARY").expect("summary").value, "Café time");
        let start = event.first("DTSTART").expect("start");
        assert_eq!(start.param("TZID"), Some("US-Eastern"));
        assert_eq!(start.value, "19970805T090000");
        assert_eq!(start.line, 8);
    }

    #[test]
    fn parameters_with_quotes_escapes_and_gaps() {
        let p = parse_content_line(
            "ATTENDEE;CN=\"Foo; Bar\";;DELEGATED-TO=\"a:b\",\"c\";EMPTY=:mailto:x@y",
            1,
        )
        .expect("line");
        assert_eq!(p.param("CN"), Some("Foo; Bar"));
        assert_eq!(p.params[1].1, vec!["a:b".to_owned(), "c".to_owned()]);
        assert_eq!(p.param("EMPTY"), None);
        assert_eq!(p.value, "mailto:x@y");
        let apple = parse_content_line("X-A;X-TITLE=Haupt 1\\; Linz;R=7:geo:1,2", 1).expect("x");
        assert_eq!(apple.param("X-TITLE"), Some("Haupt 1\\; Linz"));
        assert_eq!(apple.value, "geo:1,2");
        assert!(parse_content_line("X", 1).is_none());
    }

    #[test]
    fn structural_errors_name_their_line() {
        let truncated = read(b"BEGIN:VCALENDAR\nBEGIN:VEVENT\nEND:VEVENT\n").expect_err("cut");
        assert_eq!(truncated.line(), Some(3));
        let stray = read(b"BEGIN:VCALENDAR\nEND:VEVENT\nEND:VCALENDAR\n").expect_err("end");
        assert_eq!(stray.line(), Some(2));
        let nothing = read(b"hello\nworld\n").expect_err("nothing");
        assert_eq!(nothing.line(), Some(1));
    }

    #[test]
    fn several_calendars_and_bare_events() {
        let top =
            read(b"BEGIN:VEVENT\nUID:a\nEND:VEVENT\n\nBEGIN:VEVENT\nEND:VEVENT\n").expect("bare");
        assert_eq!(top.len(), 2);
        let two =
            read(b"BEGIN:VCALENDAR\nEND:VCALENDAR\nBEGIN:VCALENDAR\nEND:VCALENDAR\n").expect("two");
        assert_eq!(two.len(), 2);
    }

    #[test]
    fn nesting_is_capped_and_a_deep_file_is_refused_naming_the_line() {
        let depth = 50_000;
        let deep = format!(
            "{}{}",
            "BEGIN:A\r\n".repeat(depth),
            "END:A\r\n".repeat(depth)
        );
        let refused = read(deep.as_bytes()).expect_err("too deep");
        assert_eq!(refused.line(), Some(MAX_DEPTH + 1));
        assert!(
            refused.to_string().contains("more than 16 deep"),
            "{refused}"
        );
        let fits = format!(
            "{}{}",
            "BEGIN:A\n".repeat(MAX_DEPTH),
            "END:A\n".repeat(MAX_DEPTH)
        );
        assert_eq!(read(fits.as_bytes()).expect("16 levels").len(), 1);
    }

    #[test]
    fn control_characters_are_dropped_but_tabs_and_line_ends_kept() {
        let text = b"BEGIN:VEVENT\r\nSUMMARY:Ca\0f\x01\x7f\xc3\xa9\r\n\tlater\r\nEND:VEVENT\r\n";
        let top = read(text).expect("reads");
        assert_eq!(
            top[0].first("SUMMARY").expect("summary").value,
            "Caf\u{e9}later"
        );
    }
}
