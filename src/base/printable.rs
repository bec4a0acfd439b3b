//! Text that came from outside (the store, another instance) shown to
//! humans on a terminal or in the text log: control characters are
//! escaped (`\n`, `\u{1b}`), so a value cannot start a line of its own,
//! move the cursor or recolour the terminal. JSON output escapes them
//! itself and does not need this.

use std::borrow::Cow;

/// `text` with every control character escaped.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        for (raw, shown) in [
            ("ann@desk", "ann@desk"),
            ("répare le disque", "répare le disque"),
            ("a\nmaintenance.resumed", "a\\nmaintenance.resumed"),
            ("\u{1b}[2J\u{1b}[31mred", "\\u{1b}[2J\\u{1b}[31mred"),
            ("tab\there\r", "tab\\there\\r"),
            ("c1\u{9b}31m", "c1\\u{9b}31m"),
        ] {
            assert_eq!(printable(raw), shown, "{raw:?}");
        }
    }
}
