//! Conditional requests (RFC 9110 §13): the strong tag of what would be answered, and
//! whether the caller's copy is still current (a 304).
//!
//! `If-None-Match` is compared with the one current tag where it is written, rather than
//! parsed into a list of owned tags first (actix's `IfNoneMatch`): a revalidation, the
//! cheapest answer the ATM operation gives, is asked for on every app start.

use std::hash::{Hash, Hasher as _};
use std::time::SystemTime;

use actix_web::HttpRequest;
use actix_web::http::header::{self, Header as _, HeaderValue, IfModifiedSince};

/// A strong entity tag: 16 lower-case hex digits, kept with its quotes as it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrongTag {
    quoted: [u8; 18],
}

impl StrongTag {
    /// The opaque part, between the quotes.
    pub fn opaque(&self) -> &[u8] {
        &self.quoted[1..17]
    }

    /// The `ETag` header value (`"…"`).
    ///
    /// # Errors
    /// Never in fact (hex digits and quotes are a header value); said as text if it did.
    pub fn header_value(&self) -> Result<HeaderValue, String> {
        HeaderValue::from_bytes(&self.quoted).map_err(|error| error.to_string())
    }
}

/// A strong tag of whatever `parts` are: equal parts give an equal tag, on every instance
/// (the hash's keys are fixed), so a client can revalidate against any of them.
pub fn strong_tag(parts: impl Hash) -> StrongTag {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut hasher);
    let hash = hasher.finish();
    let mut quoted = [b'"'; 18];
    for (position, digit) in quoted[1..17].iter_mut().enumerate() {
        *digit = b"0123456789abcdef"[(hash >> (60 - 4 * position) & 0xf) as usize];
    }
    StrongTag { quoted }
}

/// RFC 9110 §13.2.2: If-None-Match decides when present (weak comparison); otherwise
/// If-Modified-Since, when what is answered (with tag `tag`, last changed at
/// `last_updated`, Unix seconds) has not changed since the time given.
pub fn not_modified(request: &HttpRequest, tag: &StrongTag, last_updated: i64) -> bool {
    let headers = request.headers();
    if headers.contains_key(header::IF_NONE_MATCH) {
        return none_match(headers.get_all(header::IF_NONE_MATCH), tag.opaque());
    }
    IfModifiedSince::parse(request)
        .ok()
        .and_then(|since| SystemTime::from(since.0).duration_since(SystemTime::UNIX_EPOCH).ok())
        .and_then(|since| i64::try_from(since.as_secs()).ok())
        .is_some_and(|since| last_updated <= since)
}

/// Whether the `If-None-Match` lines `values` match a representation tagged `opaque`:
/// `*`, or a list naming the tag, strong or weak (`W/"…"`). The lines of a list header
/// are one list (RFC 9110 §5.3). A line that is not visible ASCII makes the header
/// unreadable, and an unreadable header matches nothing; an item that is not an entity
/// tag is passed over (as actix reads the header).
fn none_match<'a>(values: impl Iterator<Item = &'a HeaderValue>, opaque: &[u8]) -> bool {
    let mut matched = false;
    for (index, value) in values.enumerate() {
        let Ok(text) = value.to_str() else { return false };
        if index == 0 && text.trim() == "*" {
            return true;
        }
        matched = matched || text.split(',').any(|item| entity_tag_opaque(item.trim()) == Some(opaque));
    }
    matched
}

/// The opaque part of an entity tag (`"…"` or `W/"…"`, RFC 9110 §8.8.3), or `None` when
/// `item` is not one.
fn entity_tag_opaque(item: &str) -> Option<&[u8]> {
    let quoted = item.strip_prefix("W/").unwrap_or(item).as_bytes();
    let opaque = quoted.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    // etagc: "!", then "#" to "~", and obs-text (never in a `to_str` value).
    opaque.iter().all(|&byte| byte == b'!' || (b'#'..=b'~').contains(&byte)).then_some(opaque)
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{EntityTag, IfNoneMatch};
    use actix_web::test::TestRequest;

    use super::*;

    fn request(headers: &[(&str, &str)]) -> HttpRequest {
        headers.iter().fold(TestRequest::default(), |request, &header| request.append_header(header)).to_http_request()
    }

    #[test]
    fn a_tag_is_sixteen_hex_digits_in_quotes_and_follows_its_parts() {
        let tag = strong_tag((1_u64, 2_u64));
        assert_eq!(tag, strong_tag((1_u64, 2_u64)), "the same parts, the same tag");
        assert_ne!(tag, strong_tag((1_u64, 3_u64)));
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (1_u64, 2_u64).hash(&mut hasher);
        let expected = format!("\"{:016x}\"", hasher.finish());
        assert_eq!(tag.header_value().unwrap(), expected.as_str());
        assert_eq!(tag.header_value().unwrap(), EntityTag::new_strong(expected[1..17].to_owned()).to_string().as_str());
    }

    #[test]
    fn if_none_match_is_read_as_actix_reads_it() {
        let tag = strong_tag("page");
        let current = String::from_utf8(tag.header_value().unwrap().as_bytes().to_vec()).unwrap();
        let weak = format!("W/{current}");
        let cases: Vec<Vec<&str>> = vec![
            vec![&current],
            vec![&weak],
            vec!["*"],
            vec![" * "],
            vec![r#""other""#],
            vec![r#""other", "#, &weak],
            vec![r#""other""#, &current],
            vec![r#"garbage, "#, &current],
            vec![&current[1..]],
            vec![&current[..17]],
            vec![r#""a b""#, r#""""#],
            vec![""],
            vec![",,"],
            vec!["\"other\"", "*"],
            vec!["w/", &current],
        ];
        for lines in cases {
            let joined = lines.concat();
            for sent in [vec![joined.as_str()], lines.clone()] {
                let headers: Vec<(&str, &str)> = sent.iter().map(|line| ("If-None-Match", *line)).collect();
                let request = request(&headers);
                let by_actix = match IfNoneMatch::parse(&request).unwrap_or(IfNoneMatch::Items(Vec::new())) {
                    IfNoneMatch::Any => true,
                    IfNoneMatch::Items(tags) => tags.iter().any(|sent| sent.tag().as_bytes() == tag.opaque()),
                };
                assert_eq!(not_modified(&request, &tag, i64::MAX), by_actix, "{sent:?}");
            }
        }
        let unreadable = TestRequest::default()
            .append_header(("If-None-Match", current.as_str()))
            .append_header(("If-None-Match", HeaderValue::from_bytes(b"\"\xe9\"").unwrap()))
            .to_http_request();
        assert!(!not_modified(&unreadable, &tag, i64::MAX), "an unreadable header matches nothing");
    }

    #[test]
    fn if_modified_since_counts_only_without_if_none_match() {
        let tag = strong_tag("page");
        let since = "Tue, 14 Nov 2023 22:13:20 GMT"; // 1,700,000,000
        assert!(not_modified(&request(&[("If-Modified-Since", since)]), &tag, 1_700_000_000));
        assert!(!not_modified(&request(&[("If-Modified-Since", since)]), &tag, 1_700_000_001));
        let both = request(&[("If-Modified-Since", since), ("If-None-Match", "\"stale\"")]);
        assert!(!not_modified(&both, &tag, 1_000));
        assert!(!not_modified(&request(&[]), &tag, 0), "no validator, no 304");
    }
}
