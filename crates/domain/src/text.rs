//! What a text may hold, by what it is. An identifier or a code is compared, looked up
//! and printed whole: nothing in it may be unseen, or change how what is around it reads.
//! A free text (a name, an address, a note, an explanation) is read by people, in
//! languages that may need a joiner or a direction mark: only control characters are
//! kept out of it, and whatever prints it to an operator shows the rest escaped.

use unicode_general_category::{GeneralCategory, get_general_category};

/// A character that is not seen as itself on a screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hidden {
    /// Unicode's `Cc` (C0, DEL, C1): drives a terminal (`ESC`), splits a line (`LF`).
    Control,
    /// Unicode's `Cf`: bidirectional overrides and isolates (U+202E shows what follows
    /// reversed), zero-width spaces and joiners, the soft hyphen, the byte-order mark.
    Format,
    /// Unicode's `Zl` and `Zp` (U+2028, U+2029): break a line where no newline shows.
    Separator,
}

impl Hidden {
    /// What `c` is, if it is not seen as itself.
    pub fn of(c: char) -> Option<Self> {
        match get_general_category(c) {
            GeneralCategory::Control => Some(Self::Control),
            GeneralCategory::Format => Some(Self::Format),
            GeneralCategory::LineSeparator | GeneralCategory::ParagraphSeparator => Some(Self::Separator),
            _ => None,
        }
    }

    /// Its name in an error: `the format character`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Control => "the control character",
            Self::Format => "the format character",
            Self::Separator => "the line or paragraph separator",
        }
    }
}

/// The first character of `text` that no identifier or code may hold: its place
/// (from 1), the character, and what it is.
pub fn first_hidden(text: &str) -> Option<(usize, char, Hidden)> {
    text.chars().enumerate().find_map(|(at, c)| Hidden::of(c).map(|hidden| (at + 1, c, hidden)))
}

/// What customers are told, in words they read (why an outage, why an ATM closes): 1 to
/// 500 characters, trimmed, with no control characters (it is printed one a line).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Explanation(String);

/// An explanation that is blank, too long or holds control characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the explanation must be 1 to {} characters of text, without control characters", Explanation::MAX_CHARS)]
pub struct BadExplanation;

impl Explanation {
    /// The longest explanation accepted, in characters.
    pub const MAX_CHARS: usize = 500;

    /// Parses an explanation, trimming the spaces around it.
    ///
    /// # Errors
    /// [`BadExplanation`] for a blank or too long text, or one with control characters
    /// (new lines and tabs included).
    pub fn parse(raw: &str) -> Result<Self, BadExplanation> {
        let text = raw.trim();
        if text.is_empty() || text.chars().count() > Self::MAX_CHARS || text.chars().any(char::is_control) {
            return Err(BadExplanation);
        }
        Ok(Self(text.to_owned()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_that_hide_or_reorder_text_are_told_apart_from_those_seen() {
        assert_eq!(Hidden::of('\u{1b}'), Some(Hidden::Control));
        assert_eq!(Hidden::of('\u{9b}'), Some(Hidden::Control), "C1");
        for format in ['\u{202e}', '\u{2066}', '\u{200b}', '\u{200d}', '\u{ad}', '\u{feff}', '\u{e0041}'] {
            assert_eq!(Hidden::of(format), Some(Hidden::Format), "U+{:04X}", u32::from(format));
        }
        assert_eq!(Hidden::of('\u{2028}'), Some(Hidden::Separator));
        assert_eq!(Hidden::of('\u{2029}'), Some(Hidden::Separator));
        for seen in ['A', 'é', 'Ñ', '€', '’', ' ', 'ا', '中', '👍'] {
            assert_eq!(Hidden::of(seen), None, "{seen}");
        }
    }

    #[test]
    fn the_first_hidden_character_is_found_by_its_place() {
        assert_eq!(first_hidden("ATM-001"), None);
        assert_eq!(first_hidden("AB\u{202e}C\u{1b}"), Some((3, '\u{202e}', Hidden::Format)));
    }

    #[test]
    fn an_explanation_is_trimmed_and_a_blank_or_multi_line_one_is_refused() {
        assert_eq!(
            Explanation::parse("  Database upgrade ").map(|e| e.as_str().to_owned()),
            Ok("Database upgrade".to_owned())
        );
        assert_eq!(Explanation::parse("   "), Err(BadExplanation));
        assert_eq!(Explanation::parse("one\ntwo"), Err(BadExplanation));
        assert_eq!(Explanation::parse(&"x".repeat(501)), Err(BadExplanation));
    }
}
