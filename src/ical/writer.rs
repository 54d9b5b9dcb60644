//! Writing content lines: CRLF endings, lines folded at 75 octets (never inside a UTF-8
//! sequence), TEXT values escaped, parameter values quoted when they need it.

/// A `text/calendar` document being written.
#[derive(Debug, Default)]
pub struct Writer {
    out: String,
}

/// Longest line, in octets, before folding (RFC 5545 3.1).
const FOLD_AT: usize = 75;

impl Writer {
    /// An empty document.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes `name` with `params` and an already encoded `value`.
    pub fn line(&mut self, name: &str, params: &[(&str, &str)], value: &str) {
        let mut line = String::with_capacity(name.len() + value.len() + 16);
        line.push_str(name);
        for (key, param) in params {
            line.push(';');
            line.push_str(key);
            line.push('=');
            line.push_str(&param_value(param));
        }
        line.push(':');
        line.push_str(value);
        self.fold(&line);
    }

    /// Writes a TEXT property (escaped).
    pub fn text(&mut self, name: &str, value: &str) {
        self.line(name, &[], &escape_text(value));
    }

    /// `BEGIN:<name>`.
    pub fn begin(&mut self, name: &str) {
        self.line("BEGIN", &[], name);
    }

    /// `END:<name>`.
    pub fn end(&mut self, name: &str) {
        self.line("END", &[], name);
    }

    /// The document.
    pub fn finish(self) -> String {
        self.out
    }

    fn fold(&mut self, line: &str) {
        let mut rest = line;
        let mut limit = FOLD_AT;
        loop {
            if rest.len() <= limit {
                self.out.push_str(rest);
                self.out.push_str("\r\n");
                return;
            }
            let mut cut = limit;
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            self.out.push_str(&rest[..cut]);
            self.out.push_str("\r\n ");
            rest = &rest[cut..];
            limit = FOLD_AT - 1; // the leading space counts
        }
    }
}

/// Escapes a TEXT value: `\` `;` `,` and newlines; other control characters are dropped.
pub fn escape_text(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 8);
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            ';' => out.push_str("\\;"),
            ',' => out.push_str("\\,"),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => out.push_str("\\n"),
            '\t' => out.push('\t'),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A parameter value, quoted if it holds `:`, `;` or `,` (a `"` cannot be written and
/// becomes `'`).
fn param_value(value: &str) -> String {
    let value: String = value
        .chars()
        .filter(|c| !c.is_control())
        .map(|c| if c == '"' { '\'' } else { c })
        .collect();
    if value.contains([':', ';', ',']) {
        format!("\"{value}\"")
    } else {
        value
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn folds_at_75_octets_without_splitting_characters() {
        let mut writer = Writer::new();
        let title = "Überraschung ".repeat(20);
        writer.text("SUMMARY", &title);
        let out = writer.finish();
        assert!(out.ends_with("\r\n"));
        for line in out.split("\r\n").filter(|l| !l.is_empty()) {
            assert!(line.len() <= 75, "{} octets: {line}", line.len());
        }
        let unfolded = out.replace("\r\n ", "");
        assert_eq!(unfolded, format!("SUMMARY:{title}\r\n"));
    }

    #[test]
    fn escapes_and_quotes() {
        assert_eq!(escape_text("a,b;c\\d\r\ne\nf"), "a\\,b\\;c\\\\d\\ne\\nf");
        let mut writer = Writer::new();
        writer.line(
            "DTSTART",
            &[("TZID", "America/New_York")],
            "20260101T090000",
        );
        writer.line("X", &[("CN", "Doe, \"J\"")], "y");
        assert_eq!(
            writer.finish(),
            "DTSTART;TZID=America/New_York:20260101T090000\r\nX;CN=\"Doe, 'J'\":y\r\n"
        );
    }
}
