//! The language of a request's error texts, chosen by its `Accept-Language`.

use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderValue};

pub use crate::texts::Language;

impl Language {
    /// The best of `en`/`es` for the request's `Accept-Language` (RFC 9110 §12.5.4):
    /// the highest-weighted range whose primary tag is `en` or `es`; `*` and absent or
    /// unparseable headers give English.
    pub fn of(request: &HttpRequest) -> Self {
        let Some(raw) = request.headers().get(header::ACCEPT_LANGUAGE).and_then(|value| value.to_str().ok()) else {
            return Self::default();
        };
        let mut best: Option<(f32, Self)> = None;
        for range in raw.split(',') {
            let mut parts = range.split(';');
            let tag = parts.next().unwrap_or_default().trim();
            let weight = parts
                .find_map(|param| param.trim().strip_prefix("q="))
                .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())
                .unwrap_or(0.0);
            let primary = tag.split('-').next().unwrap_or_default();
            let language = if primary.eq_ignore_ascii_case("es") {
                Self::Es
            } else if primary.eq_ignore_ascii_case("en") {
                Self::En
            } else {
                continue;
            };
            if weight > 0.0 && best.is_none_or(|(top, _)| weight > top) {
                best = Some((weight, language));
            }
        }
        best.map(|(_, language)| language).unwrap_or_default()
    }

    /// The `Content-Language` value.
    pub fn header_value(self) -> HeaderValue {
        HeaderValue::from_static(self.tag())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn of(header: &str) -> Language {
        Language::of(&TestRequest::default().insert_header(("Accept-Language", header)).to_http_request())
    }

    #[test]
    fn spanish_is_chosen_by_its_primary_tag_or_weight() {
        assert_eq!(of("es-MX"), Language::Es);
        assert_eq!(of("fr-FR, es;q=0.8, en;q=0.5"), Language::Es);
        assert_eq!(of("es;q=0.2, en-GB;q=0.9"), Language::En);
    }

    #[test]
    fn unknown_or_refused_languages_fall_back_to_english() {
        assert_eq!(of("fr, de"), Language::En);
        assert_eq!(of("es;q=0"), Language::En);
        assert_eq!(of("*"), Language::En);
        assert_eq!(Language::of(&TestRequest::default().to_http_request()), Language::En);
    }
}
