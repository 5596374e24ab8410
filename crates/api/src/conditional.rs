//! Conditional requests (RFC 9110 §13): the validators a GET sent, the strong tag of what
//! would be answered, and whether the caller's copy is still current (a 304).

use std::hash::{Hash, Hasher as _};
use std::time::SystemTime;

use actix_web::HttpRequest;
use actix_web::http::header::{EntityTag, Header as _, IfModifiedSince, IfNoneMatch};

/// What a conditional request sent, already read from its headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators<'a> {
    /// `If-None-Match`: `*` or the tags sent (their opaque part; compared weakly).
    pub if_none_match: Option<NoneMatch<'a>>,
    /// `If-Modified-Since`, seconds since the Unix epoch.
    pub if_modified_since: Option<i64>,
}

/// An `If-None-Match` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoneMatch<'a> {
    /// `*`: any current representation.
    Any,
    /// These tags.
    Tags(Vec<&'a str>),
}

/// The `If-None-Match` header of `request`, when it has one; one that cannot be read
/// matches nothing.
pub fn if_none_match(request: &HttpRequest) -> Option<IfNoneMatch> {
    request
        .headers()
        .contains_key(actix_web::http::header::IF_NONE_MATCH)
        .then(|| IfNoneMatch::parse(request).unwrap_or(IfNoneMatch::Items(Vec::new())))
}

/// The validators `request` sent, tags borrowed from `if_none_match` (its parsed header).
/// If-Modified-Since is read only without If-None-Match, which decides when present
/// (RFC 9110 §13.2.2).
pub fn validators<'a>(request: &HttpRequest, if_none_match: Option<&'a IfNoneMatch>) -> Validators<'a> {
    let if_none_match = if_none_match.map(|header| match header {
        IfNoneMatch::Any => NoneMatch::Any,
        IfNoneMatch::Items(tags) => NoneMatch::Tags(tags.iter().map(EntityTag::tag).collect()),
    });
    let if_modified_since = if if_none_match.is_some() {
        None
    } else {
        IfModifiedSince::parse(request)
            .ok()
            .and_then(|since| SystemTime::from(since.0).duration_since(SystemTime::UNIX_EPOCH).ok())
            .and_then(|since| i64::try_from(since.as_secs()).ok())
    };
    Validators { if_none_match, if_modified_since }
}

/// A strong tag of whatever `parts` are: equal parts give an equal tag, on every instance
/// (the hash's keys are fixed), so a client can revalidate against any of them.
pub fn strong_tag(parts: impl Hash) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// RFC 9110 §13.2.2: If-None-Match decides when present (weak comparison); otherwise
/// If-Modified-Since, when what is answered has not changed since the time given.
pub fn not_modified(validators: &Validators<'_>, tag: &str, last_updated: i64) -> bool {
    match &validators.if_none_match {
        Some(NoneMatch::Any) => true,
        Some(NoneMatch::Tags(sent)) => sent.contains(&tag),
        None => validators.if_modified_since.is_some_and(|since| last_updated <= since),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_sent_back_is_not_modified_and_another_is() {
        let tag = strong_tag((1_u64, 2_u64));
        assert_eq!(tag, strong_tag((1_u64, 2_u64)), "the same parts, the same tag");
        assert_ne!(tag, strong_tag((1_u64, 3_u64)));
        let same = Validators { if_none_match: Some(NoneMatch::Tags(vec!["other", &tag])), ..Default::default() };
        assert!(not_modified(&same, &tag, 1_000));
        let stale = Validators { if_none_match: Some(NoneMatch::Tags(vec!["other"])), ..Default::default() };
        assert!(!not_modified(&stale, &tag, 1_000));
        let any = Validators { if_none_match: Some(NoneMatch::Any), ..Default::default() };
        assert!(not_modified(&any, &tag, 1_000));
    }

    #[test]
    fn if_modified_since_counts_only_without_if_none_match() {
        let since = |at| Validators { if_modified_since: Some(at), ..Default::default() };
        assert!(not_modified(&since(1_000), "tag", 1_000));
        assert!(!not_modified(&since(999), "tag", 1_000));
        let both = Validators { if_none_match: Some(NoneMatch::Tags(vec!["stale"])), if_modified_since: Some(1_000) };
        assert!(!not_modified(&both, "tag", 1_000));
    }
}
