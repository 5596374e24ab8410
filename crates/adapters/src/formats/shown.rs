//! Text from a feed as an operator is shown it: in a command's output or in the one
//! line that refuses a file.
//!
//! A feed is written by someone else. Its text must not drive the operator's terminal
//! (`\u{1b}[2J` clears it), split a one-line answer (`\n`, U+2028), read on screen in
//! another order than it is (U+202E), or make that line as long as the value (a 10 MB CSV
//! field). So every character not seen as itself ([`Hidden`]) is shown escaped, and a
//! quoted value is cut to its first [`QUOTED_CHARACTERS`] characters, its full length
//! said beside it.

use std::borrow::Cow;
use std::fmt::Write as _;

use domain::text::Hidden;

/// Characters of a bad value an error quotes: enough to recognise it (an identification
/// is at most 35, a name 70 to 140), short enough that the error stays one readable line.
pub const QUOTED_CHARACTERS: usize = 64;

/// Characters of a refusal's reason as a parser wrote it, at most: the longest a parser
/// writes without a value in it is its list of expected names (about 400 characters for
/// OBIE's services), so only a value it failed to delimit makes a reason longer.
const REASON_CHARACTERS: usize = 1024;

/// `text` with every character not seen as itself (Unicode's `Cc`, `Cf`, `Zl` and
/// `Zp`: tab, newline, escape, bidirectional overrides, zero-width joiners…) written as
/// its escape, `\u{1b}`; any other character as it is.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| Hidden::of(c).is_some()) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_shown(&mut shown, c);
    }
    Cow::Owned(shown)
}

/// `c` added to `shown`, escaped if it is not seen as itself.
fn push_shown(shown: &mut String, c: char) {
    if Hidden::of(c).is_some() {
        shown.extend(c.escape_unicode());
    } else {
        shown.push(c);
    }
}

/// `value` between double quotes, its quotes and backslashes escaped with a backslash
/// and every character not seen as itself as [`escaped`] writes it, cut to its first [`QUOTED_CHARACTERS`]
/// characters: `"abc…"… (10485760 characters)`.
pub fn quoted(value: &str) -> String {
    let (kept, cut) = match value.char_indices().nth(QUOTED_CHARACTERS) {
        None => (value, false),
        Some((end, _)) => (&value[..end], true),
    };
    let mut shown = String::with_capacity(kept.len() + 2);
    shown.push('"');
    for c in kept.chars() {
        if c == '"' || c == '\\' {
            shown.push('\\');
        }
        push_shown(&mut shown, c);
    }
    shown.push('"');
    if cut {
        // Writing to a String cannot fail.
        let _ = write!(shown, "… ({} characters)", value.chars().count());
    }
    shown
}

/// `text` cut to its first [`QUOTED_CHARACTERS`] characters (with `…` if it was longer),
/// control characters escaped: a name from a feed that is part of a longer line, such as
/// a field's name in a record's path.
pub fn excerpt(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARACTERS) {
        None => escaped(text).into_owned(),
        Some((cut, _)) => format!("{}…", escaped(&text[..cut])),
    }
}

/// `text` as [`excerpt`] cuts it, with its length said when it was cut: a value another
/// program quotes itself (clap's `'…'`), `abc…… (100000 characters)` inside its quotes.
pub fn shortened(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARACTERS) {
        None => escaped(text).into_owned(),
        Some(_) => format!("{} ({} characters)", excerpt(text), text.chars().count()),
    }
}

/// A parser's reason for refusing a value (serde's `unknown variant `…``, `invalid type:
/// string "…"`), with each value it quotes between backticks or double quotes cut as
/// [`quoted`] cuts one, control characters escaped, and the whole at most
/// `REASON_CHARACTERS` characters.
pub fn reason(message: &str) -> String {
    let mut shown = String::new();
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        if c != '`' && c != '"' {
            push_shown(&mut shown, c);
            continue;
        }
        // A quoted value: up to the closing mark (a double-quoted one is escaped as Rust
        // writes strings, so `\"` does not close it).
        let (mut value, mut closed) = (String::new(), false);
        while let Some(inner) = chars.next() {
            if inner == c {
                closed = true;
                break;
            }
            value.push(inner);
            if c == '"' && inner == '\\' {
                value.extend(chars.next());
            }
        }
        let length = value.chars().count();
        let kept: String = value.chars().take(QUOTED_CHARACTERS).collect();
        shown.push(c);
        shown.push_str(&escaped(&kept));
        if closed {
            shown.push(c);
        }
        if length > QUOTED_CHARACTERS {
            // Writing to a String cannot fail.
            let _ = write!(shown, "… ({length} characters)");
        }
    }
    match shown.char_indices().nth(REASON_CHARACTERS) {
        None => shown,
        Some((cut, _)) => format!("{}… ({} characters)", &shown[..cut], shown.chars().count()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_escaped_and_other_text_as_it_is() {
        assert_eq!(escaped("Zócalo 1"), "Zócalo 1");
        assert_eq!(escaped("A1\u{1b}[2J\nB\u{0}\u{7f}\u{9b}\t"), "A1\\u{1b}[2J\\u{a}B\\u{0}\\u{7f}\\u{9b}\\u{9}");
        assert_eq!(escaped("Cierre\u{202e}oicivres\u{2028}x\u{200d}"), "Cierre\\u{202e}oicivres\\u{2028}x\\u{200d}");
    }

    #[test]
    fn a_long_value_is_quoted_by_its_first_64_characters_and_its_length() {
        assert_eq!(quoted("A1\u{1b}"), "\"A1\\u{1b}\"");
        let long = "é".repeat(10 * 1024 * 1024);
        let shown = quoted(&long);
        assert_eq!(shown, format!("{:?}… (10485760 characters)", "é".repeat(64)));
        assert_eq!(quoted(&"x".repeat(64)), format!("{:?}", "x".repeat(64)), "64 characters are quoted whole");
    }

    #[test]
    fn an_excerpt_is_cut_and_escaped_without_quotes() {
        assert_eq!(excerpt("Note"), "Note");
        assert_eq!(excerpt(&format!("\u{1b}{}", "y".repeat(100))), format!("\\u{{1b}}{}…", "y".repeat(63)));
    }

    #[test]
    fn a_parsers_reason_quotes_its_values_cut_and_escaped() {
        let huge = "x".repeat(1_000_000);
        let variant = reason(&format!("unknown variant `{huge}\u{1b}`, expected one of `Balance`, `PINChange`"));
        assert_eq!(
            variant,
            format!(
                "unknown variant `{}`… (1000001 characters), expected one of `Balance`, `PINChange`",
                "x".repeat(64)
            )
        );
        let string = reason(&format!("invalid type: string {:?}, expected a boolean", format!("a\"{huge}")));
        assert!(string.starts_with("invalid type: string \"a\\\"xxx") && string.ends_with(", expected a boolean"));
        assert!(string.len() < 200, "{string}");
        let unclosed = reason(&format!("bad `{huge}"));
        assert!(unclosed.len() < 200 && unclosed.ends_with("… (1000000 characters)"), "{unclosed}");
        let undelimited = reason(&format!("a`b` {huge}"));
        assert_eq!(undelimited.chars().count(), 1024 + "… (1000005 characters)".chars().count(), "{undelimited}");
        assert_eq!(reason("line 1:\ttab"), "line 1:\\u{9}tab");
    }
}
