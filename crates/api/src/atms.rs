//! GET /api/v1/atms: ATM information, paged, filtered and near-me, with conditional
//! requests.

use std::time::{Duration, SystemTime};

use actix_web::http::header::{self, HeaderValue, HttpDate};
use actix_web::{HttpRequest, HttpResponse};
use domain::atm::{Accessibility, AtmService};
use domain::atm_catalog::{AtmQuery, GeoPoint, MAX_RADIUS_KM, PageRequest};
use domain::services::atms::AtmListing;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

use crate::conditional::{StrongTag, not_modified, strong_tag};
use crate::errors::bodies::ObieErrorBody as AtmError;
use crate::errors::{ApiError, Atms, BadRequest, Failure, Message, answer, mime_json};
use crate::headers::{BearerHeaders, ErrorLanguage, OptionalCorrelation};
use crate::request::{Query, authenticate, optional_uuid};
use crate::state::AppState;

/// The query parameters read; others are ignored.
const PARAMETERS: [&str; 7] = ["page", "latitude", "longitude", "radiusKm", "service", "accessibility", "available"];

/// The licence marker until the bank publishes its licence text (docs/contract.md).
const AGREEMENT: &str = "TBC";

/// The record field carrying the distance of a near-me result. OBIE ATM records allow
/// additional properties, so the record stays valid.
const DISTANCE_FIELD: &str = "DistanceInMetres";

/// ATM data changes by import: the client may keep a page a minute and must then
/// revalidate (cheap: a 304). `private`, because the request carries a token: RFC 9111
/// §3.5 would let a shared cache serve a `public` answer to requests without one.
const CACHE_CONTROL: &str = "private, max-age=60, must-revalidate";

/// The ATM list response, as documented (the body is written from ready JSON by
/// [`render`]; the black-box tests validate real bodies against this schema).
#[derive(ToSchema)]
#[schema(as = AtmListResponse)]
pub(crate) struct AtmListResponse<'a> {
    meta: AtmMeta<'a>,
    /// The page's ATMs, each in its stored record, in runs of one brand: `AtmBrand` and
    /// `ATM` in the document are the reference file's (`openapi::document`).
    #[schema(schema_with = brand_runs)]
    data: &'a AtmListing,
    link: AtmLinks,
}

/// The schema of the answer's `data`.
fn brand_runs() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(utoipa::openapi::Ref::from_schema_name("AtmBrand"))
        .description(Some("ATMs by brand, in page order; near-me pages group consecutive ATMs of one brand."))
        .build()
}

// The answer's `meta`. (No doc comment on these two: it would be the schema's
// description, which the document has never had.)
#[derive(ToSchema)]
pub(crate) struct AtmMeta<'a> {
    /// When the ATM set was last replaced.
    #[schema(rename = "LastUpdated", value_type = String, format = DateTime)]
    last_updated: &'a str,
    /// How many ATMs match the request, over all pages.
    #[schema(rename = "TotalResults", minimum = 0)]
    total_results: u64,
    /// `TBC` until the bank publishes its licence text.
    #[schema(rename = "Agreement", value_type = String, example = "TBC")]
    agreement: &'static str,
}

// The answer's `link`: the pages it links to, written as absolute links that keep the
// listing's filters (`write_link`).
#[derive(ToSchema)]
pub(crate) struct AtmLinks {
    /// This page.
    #[schema(rename = "Self", value_type = String, format = "uri")]
    this: u32,
    /// The first page.
    #[schema(rename = "First", value_type = String, format = "uri")]
    first: u32,
    /// The previous page, if any.
    #[schema(rename = "Prev", value_type = Option<String>, format = "uri")]
    prev: Option<u32>,
    /// The next page, if any.
    #[schema(rename = "Next", value_type = Option<String>, format = "uri")]
    next: Option<u32>,
    /// The last page.
    #[schema(rename = "Last", value_type = String, format = "uri")]
    last: u32,
}

/// The listing asked for, with the filter part as it goes into links and ETags.
#[derive(Debug)]
struct Listing {
    query: AtmQuery,
    /// `latitude=…&longitude=…&…` in a fixed order, empty without filters.
    filters: String,
}

/// The most a radius may be: half the Earth's circumference, every ATM in reach.
const MAX_RADIUS_TEXT: &str = "20037.5";

/// A finite decimal number as written in a query: digits, sign, point and exponent
/// (`19.43`, `-99`, `5e-3`); no `inf`, `NaN`, hex or spaces.
fn decimal(raw: &str) -> Option<f64> {
    let plain = !raw.is_empty() && raw.len() <= 32 && raw.bytes().all(|b| b.is_ascii_digit() || b".-+eE".contains(&b));
    plain.then(|| raw.parse::<f64>().ok()).flatten().filter(|value| value.is_finite())
}

/// `raw` as a number within `min..=max`, or what is wrong with it.
fn coordinate(
    name: &'static str,
    raw: &str,
    bounds: (&'static str, &'static str),
    max: f64,
) -> Result<f64, BadRequest> {
    let value = decimal(raw).ok_or_else(|| BadRequest::new(name, Message::Decimal))?;
    if value.abs() > max {
        return Err(BadRequest::new(name, Message::Between(bounds.0, bounds.1)));
    }
    Ok(value)
}

fn listing_of(raw: &str) -> Result<Listing, BadRequest> {
    let query = Query::parse(raw, &PARAMETERS)?;
    let page = query.optional("page").map_or(PageRequest::FIRST, PageRequest::parse);
    let mut filters = Vec::new();
    let near = match (query.optional("latitude"), query.optional("longitude")) {
        (None, None) => None,
        (Some(lat), Some(lon)) => {
            let latitude = coordinate("latitude", lat, ("-90", "90"), 90.0)?;
            let longitude = coordinate("longitude", lon, ("-180", "180"), 180.0)?;
            let point = GeoPoint::new(latitude, longitude)
                .ok_or_else(|| BadRequest::new("latitude", Message::Between("-90", "90")))?;
            filters.push(format!("latitude={lat}&longitude={lon}"));
            Some(point)
        }
        (None, Some(_)) => return Err(BadRequest::new("latitude", Message::SentWith("longitude"))),
        (Some(_), None) => return Err(BadRequest::new("longitude", Message::SentWith("latitude"))),
    };
    let radius_km = match query.optional("radiusKm") {
        None => None,
        Some(_) if near.is_none() => return Err(BadRequest::new("radiusKm", Message::NeedsPoint)),
        Some(raw) => {
            let radius = decimal(raw)
                .filter(|r| *r > 0.0 && *r <= MAX_RADIUS_KM)
                .ok_or_else(|| BadRequest::new("radiusKm", Message::AboveZeroUpTo(MAX_RADIUS_TEXT)))?;
            filters.push(format!("radiusKm={raw}"));
            Some(radius)
        }
    };
    let service = query
        .optional("service")
        .map(|raw| {
            let service = AtmService::parse(raw)
                .ok_or_else(|| BadRequest::new("service", Message::NotACode("ATMServices", "CashWithdrawal")))?;
            filters.push(format!("service={raw}"));
            Ok::<_, BadRequest>(service)
        })
        .transpose()?;
    let accessibility = query
        .optional("accessibility")
        .map(|raw| {
            let feature = Accessibility::parse(raw).ok_or_else(|| {
                BadRequest::new("accessibility", Message::NotACode("Accessibility", "WheelchairAccess"))
            })?;
            filters.push(format!("accessibility={raw}"));
            Ok::<_, BadRequest>(feature)
        })
        .transpose()?;
    let available = query
        .optional("available")
        .map(|raw| {
            let service = AtmService::parse(raw)
                .ok_or_else(|| BadRequest::new("available", Message::NotACode("ATMServices", "CashWithdrawal")))?;
            filters.push(format!("available={raw}"));
            Ok::<_, BadRequest>(service)
        })
        .transpose()?;
    let query = AtmQuery { page, near, radius_km, service, accessibility, available };
    Ok(Listing { query, filters: filters.join("&") })
}

/// A digest of what shapes a page's bytes beyond the set and the page: the service's
/// version, the base URL of its links, and the filters as written in them.
fn representation(base: &str, filters: &str) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (env!("CARGO_PKG_VERSION"), base, filters).hash(&mut hasher);
    hasher.finish()
}

/// Writes the link to page `page` of the listing (its filters kept) into `body`.
fn write_link(body: &mut String, base: &str, filters: &str, page: u32) {
    body.push_str(base);
    body.push_str("/api/v1/atms?page=");
    body.push_str(itoa::Buffer::new().format(page));
    if !filters.is_empty() {
        body.push('&');
        body.push_str(filters);
    }
}

/// The answer for `page` of the listing with `filters`, its links under `base`.
fn render(page: &AtmListing, filters: &str, base: &str) -> Result<Vec<u8>, String> {
    let updated = OffsetDateTime::from_unix_timestamp(page.last_updated())
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .ok_or_else(|| format!("LastUpdated {} is not a date", page.last_updated()))?;
    let (current, last) = (page.number(), page.last_page());
    AtmListResponse {
        meta: AtmMeta { last_updated: &updated, total_results: page.total() as u64, agreement: AGREEMENT },
        data: page,
        link: AtmLinks {
            this: current,
            first: 1,
            prev: (current > 1).then(|| current - 1),
            next: (current < last).then(|| current + 1),
            last,
        },
    }
    .body(filters, base)
}

impl AtmListResponse<'_> {
    /// The envelope: meta, data grouped in runs of one brand (keeping the page's
    /// order), and links. Records are copied in their stored JSON. Written in place into
    /// one buffer sized for the whole answer: a `format!` per distance and per link, and
    /// the buffer growing (a copy of every record written so far) were a third of a
    /// near-me page's instructions (callgrind, issue 25).
    fn body(&self, filters: &str, base: &str) -> Result<Vec<u8>, String> {
        const DISTANCE: usize = r#","DistanceInMetres":20037509"#.len();
        const BRAND: usize = r#"]},{"BrandName":"","ATM":["#.len();
        let records: usize =
            self.data.items().map(|item| item.record.len() + item.brand.len() + BRAND + DISTANCE).sum();
        let links = 5 * (r#","First":"/api/v1/atms?page=4294967295&""#.len() + base.len() + filters.len());
        let mut body = String::with_capacity(records + links + 256);
        let mut number = itoa::Buffer::new();
        let meta = &self.meta;
        body.push_str(r#"{"meta":{"LastUpdated":""#);
        body.push_str(meta.last_updated);
        body.push_str(r#"","TotalResults":"#);
        body.push_str(number.format(meta.total_results));
        body.push_str(r#","Agreement":""#);
        body.push_str(meta.agreement);
        body.push_str(r#""},"data":["#);
        let mut current_brand: Option<&str> = None;
        for item in self.data.items() {
            let brand = item.brand;
            if current_brand == Some(brand) {
                body.push(',');
            } else {
                if current_brand.is_some() {
                    body.push_str("]},");
                }
                body.push_str(r#"{"BrandName":"#);
                let name = serde_json::to_string(brand).map_err(|error| error.to_string())?;
                body.push_str(&name);
                body.push_str(r#","ATM":["#);
                current_brand = Some(brand);
            }
            let record = item.record;
            match item.distance_m {
                None => body.push_str(record),
                Some(metres) => {
                    body.push_str(record.strip_suffix('}').ok_or("a stored record is not a JSON object")?);
                    body.push_str(r#",""#);
                    body.push_str(DISTANCE_FIELD);
                    body.push_str(r#"":"#);
                    body.push_str(number.format(metres));
                    body.push('}');
                }
            }
        }
        if current_brand.is_some() {
            body.push_str("]}");
        }
        let links = &self.link;
        let mut link = |name: &str, to: u32| {
            body.push_str(name);
            write_link(&mut body, base, filters, to);
            body.push('"');
        };
        link(r#"],"link":{"Self":""#, links.this);
        link(r#","First":""#, links.first);
        if let Some(prev) = links.prev {
            link(r#","Prev":""#, prev);
        }
        if let Some(next) = links.next {
            link(r#","Next":""#, next);
        }
        link(r#","Last":""#, links.last);
        body.push_str("}}");
        Ok(body.into_bytes())
    }
}

/// The `Last-Modified` value of a set last updated at `last_updated` (Unix seconds). The
/// set changes a few times a day at most, so each worker thread keeps the last value it
/// formatted rather than formatting an HTTP date per answer.
fn last_modified(last_updated: i64) -> Result<HeaderValue, String> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(i64, HeaderValue)>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| match last {
        Some((at, value)) if *at == last_updated => Ok(value.clone()),
        _ => {
            let date = HttpDate::from(SystemTime::UNIX_EPOCH + Duration::from_secs(last_updated.max(0).unsigned_abs()));
            let value = HeaderValue::from_maybe_shared(date.to_string()).map_err(|error| error.to_string())?;
            *last = Some((last_updated, value.clone()));
            Ok(value)
        }
    })
}

/// Lists ATMs.
#[utoipa::path(
    get,
    path = "/v1/atms",
    tag = "ATMs",
    operation_id = "listAtms",
    summary = "ATM locations and services",
    security(("bearer" = []), ("dpop" = [])),
    params(
        BearerHeaders,
        OptionalCorrelation,
        ("If-None-Match" = Option<String>, Header, description = "An ETag from an earlier answer: 304 if it still matches."),
        ("If-Modified-Since" = Option<String>, Header, description = "An HTTP date: 304 if the data has not changed since (ignored when If-None-Match is sent)."),
        ErrorLanguage,
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page number; pages follow brand, then identification (or distance, near-me)."),
        ("latitude" = Option<f64>, Query, minimum = -90, maximum = 90, description = "Near-me search: with longitude, nearest ATMs first, each with `DistanceInMetres`."),
        ("longitude" = Option<f64>, Query, minimum = -180, maximum = 180, description = "Near-me search: with latitude."),
        ("radiusKm" = Option<f64>, Query, exclusive_minimum = 0, maximum = 20037.5, description = "Only ATMs within this distance (needs latitude and longitude)."),
        ("service" = Option<String>, Query, pattern = "^(Balance|BillPayments|CashDeposits|CharityDonation|ChequeDeposits|CashWithdrawal|EnvelopeDeposit|FastCash|MobileBankingRegistration|MobilePaymentRegistration|MobilePhoneTopUp|OrderStatement|Other|PINActivation|PINChange|PINUnblock|MiniStatement)$", description = "Only ATMs offering this OBIE ATMServices code."),
        ("accessibility" = Option<String>, Query, pattern = "^(AudioCashMachine|AutomaticDoors|ExternalRamp|InductionLoop|InternalRamp|LevelAccess|LowerLevelCounter|Other|WheelchairAccess)$", description = "Only ATMs with this OBIE Accessibility code."),
        ("available" = Option<String>, Query, pattern = "^(Balance|BillPayments|CashDeposits|CharityDonation|ChequeDeposits|CashWithdrawal|EnvelopeDeposit|FastCash|MobileBankingRegistration|MobilePaymentRegistration|MobilePhoneTopUp|OrderStatement|Other|PINActivation|PINChange|PINUnblock|MiniStatement)$", description = "Only ATMs whose state offers this OBIE ATMServices code now (in service or limited without it; never Unknown)."),
    ),
    responses(
        (status = 200, description = "A page of ATMs.", body = AtmListResponse, headers(
            ("ETag" = String, description = "Strong validator of this page."),
            ("Last-Modified" = String, description = "When the ATM set was last replaced."),
            ("Cache-Control" = String, description = "`private, max-age=60, must-revalidate`: for the client's own cache only, never a shared one."),
            ("uuid" = String, description = "The request's `uuid` header, when one was sent."),
        )),
        (status = 304, description = "Not modified since the ETag or date sent.", headers(
            ("ETag" = String, description = "The page's validator."),
        )),
        (status = 400, description = "Bad request: an invalid query, `uuid` or `client_id`, or a page past the last.", body = AtmError),
        (status = 401, description = "Token, its DPoP proof or `client_id` missing or invalid.", body = AtmError,
            headers(("WWW-Authenticate" = String, description = "The scheme the request used: `Bearer` (with `error=\"invalid_token\"` for a refused token), or `DPoP` with `algs` (with `error=\"invalid_token\"`, `\"invalid_dpop_proof\"` for a refused proof, or `\"use_dpop_nonce\"`)."),
                ("DPoP-Nonce" = String, description = "With `use_dpop_nonce`: the nonce to put in the next proof (`serve --dpop-nonce`)."))),
        (status = 405, description = "Method not allowed.", body = AtmError),
        (status = 408, description = "The request was not sent in time (the answer has no body).", body = AtmError),
        (status = 429, description = "Over the session's, the caller address's or the client's request rate.", body = AtmError,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
        (status = 500, description = "Internal server error.", body = AtmError),
        (status = 503, description = "The ATM data cannot be served now.", body = AtmError,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
    ),
)]
///
/// Responses: 200 the page (ETag, Last-Modified, Cache-Control); 304 when If-None-Match
/// matches or, without it, If-Modified-Since is not older than LastUpdated; 400 bad
/// query, `uuid` or `client_id`; 401 bearer token; 408 (from the HTTP layer) a request
/// not sent in time; 429 session, caller address or client over its rate (Retry-After); 503 the ATM set cannot be
/// vouched for. Bodies are OBIE's `{status, title, description}`.
pub async fn list(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer::<Atms>(
        &request,
        async {
            let state = AppState::of(&request)?;
            // 1. Extract: optional uuid, credentials, the client's rate, the query.
            optional_uuid(request.headers())?;
            authenticate(state, &request).await?;
            // 2. Domain values.
            let listing = listing_of(request.query_string())?;
            // 3. Call the use case: the set as served now. A page's bytes are a function of the
            // set (its fingerprint covers LastUpdated), the page size, the page number and the
            // representation (filters as written, base URL, version), so its strong tag is
            // known before the page is cut, and a caller's current copy costs no page (RFC 9110
            // §13.2.2).
            let by_state = listing.query.available.is_some();
            let snapshot = state.atms.snapshot(by_state).await?;
            snapshot.check_page(&listing.query)?;
            let base = state.public_base_url.as_str();
            // By state, the page may change with the clock alone: it is cut first and
            // tagged by what it holds, and If-Modified-Since is not read.
            let cut = by_state.then(|| snapshot.page(&listing.query)).transpose()?;
            let tag = strong_tag((
                snapshot.fingerprint(),
                representation(base, &listing.filters),
                snapshot.page_size(),
                listing.query.page.or_first(),
                cut.as_ref().map(AtmListing::digest),
            ));
            let last_updated = snapshot.last_updated();
            let modified_at = if by_state { i64::MAX } else { last_updated };
            let page = match (not_modified(&request, &tag, modified_at), cut) {
                (true, _) => None,
                (false, Some(cut)) => Some(cut),
                (false, None) => Some(snapshot.page(&listing.query)?),
            };
            // 4. Map to the wire.
            atms_answer(page.as_ref(), &tag, last_updated, &listing.filters, base).map_err(Failure::unwritable)
        }
        .await,
    )
}

/// The answer: `page` (200), or 304 when the caller's copy is current (`None`), with
/// the validators and the caching rule either way; or why it could not be written.
fn atms_answer(
    page: Option<&AtmListing>,
    tag: &StrongTag,
    last_updated: i64,
    filters: &str,
    base: &str,
) -> Result<HttpResponse, String> {
    let mut response = if page.is_some() { HttpResponse::Ok() } else { HttpResponse::NotModified() };
    response
        .insert_header((header::ETAG, tag.header_value()?))
        .insert_header((header::LAST_MODIFIED, last_modified(last_updated)?))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL)));
    match page {
        None => Ok(response.finish()),
        Some(page) => {
            let body = render(page, filters, base)?;
            Ok(response.content_type(mime_json()).body(body))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_modified_is_written_as_actix_writes_it() {
        use actix_web::http::header::TryIntoHeaderValue as _;
        // The same time twice (the kept value), then others (each made anew).
        for at in [1_700_000_000, 1_700_000_000, 0, 1_800_000_001] {
            let expected = HttpDate::from(SystemTime::UNIX_EPOCH + Duration::from_secs(at)).try_into_value().unwrap();
            assert_eq!(last_modified(at as i64).unwrap(), expected);
        }
    }

    #[test]
    fn pages_are_positive_decimal_numbers() {
        assert_eq!(listing_of("page=3").unwrap().query.page, PageRequest::number(3));
        assert_eq!(listing_of("").unwrap().query.page, PageRequest::FIRST);
        for bad in ["page=0", "page=-1", "page=x", "page=1.0", "page=+2", "page=%201", "page=9999999999"] {
            let listing = listing_of(bad).unwrap();
            assert!(!listing.query.page.is_number(), "{bad}: told once the last page is known");
        }
    }

    #[test]
    fn coordinates_go_together_and_stay_on_the_globe() {
        let near = listing_of("latitude=19.4326&longitude=-99.1332&radiusKm=5").unwrap();
        assert!(near.query.near.is_some());
        assert_eq!(near.filters, "latitude=19.4326&longitude=-99.1332&radiusKm=5");
        let cases = [
            ("latitude=19.4", "longitude", Message::SentWith("latitude")),
            ("longitude=-99.1", "latitude", Message::SentWith("longitude")),
            ("latitude=91&longitude=0", "latitude", Message::Between("-90", "90")),
            ("latitude=0&longitude=181", "longitude", Message::Between("-180", "180")),
            ("latitude=NaN&longitude=0", "latitude", Message::Decimal),
            ("latitude=0x1&longitude=0", "latitude", Message::Decimal),
            ("latitude=inf&longitude=0", "latitude", Message::Decimal),
            ("radiusKm=5", "radiusKm", Message::NeedsPoint),
            ("latitude=0&longitude=0&radiusKm=0", "radiusKm", Message::AboveZeroUpTo(MAX_RADIUS_TEXT)),
            ("latitude=0&longitude=0&radiusKm=-3", "radiusKm", Message::AboveZeroUpTo(MAX_RADIUS_TEXT)),
            ("latitude=0&longitude=0&radiusKm=99999", "radiusKm", Message::AboveZeroUpTo(MAX_RADIUS_TEXT)),
        ];
        for (query, location, message) in cases {
            assert_eq!(listing_of(query).unwrap_err(), BadRequest::new(location, message), "{query}");
        }
    }

    #[test]
    fn filters_take_obie_code_names() {
        let listing = listing_of("service=CashDeposits&accessibility=WheelchairAccess").unwrap();
        assert_eq!(listing.query.service, Some(AtmService::CashDeposits));
        assert_eq!(listing.query.accessibility, Some(Accessibility::WheelchairAccess));
        let service = listing_of("service=cashdeposits").unwrap_err();
        assert_eq!(service, BadRequest::new("service", Message::NotACode("ATMServices", "CashWithdrawal")));
        assert_eq!(listing_of("accessibility=Ramp").unwrap_err().location, "accessibility");
    }
}
