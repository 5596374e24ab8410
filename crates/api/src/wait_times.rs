//! POST /api/v1/open-banking/channels/branch/waittime/retrieve.

use std::borrow::Cow;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use domain::branch::{BranchId, BranchWaitTime};
use domain::client::{BusinessCode, ChannelId, ChannelScope, CountryCode};
use domain::services::wait_times::{MAX_BRANCHES_PER_REQUEST, WaitTimeQuery};
use domain::token::SessionId;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::errors::bodies::ErrorResponseBody as ErrorResponse;
use crate::errors::{ApiError, BadRequest, Message, WaitTimes, answer, mime_json};
use crate::headers::{
    BUSINESS_CODE, BearerHeaders, CHANNEL_ID, CONTENT_TYPE, COUNTRY_CODE, Correlation, ErrorLanguage, SESSION_ID,
};
use crate::request::{
    accepts_json_header, authenticate, is_json_content_type, parsed_header, read_body, require_uuid, required_header,
};
use crate::state::AppState;

// Required fields are `Option`s so that a missing one is located here, at its own path,
// rather than by serde at the object that lacks it (`branches[0]`); the schema still says
// they are required.
/// RetrieveBranchWaitTimeRequest. The spec's samples name the key `branch`; it is
/// accepted as an alias of `branches`. Unknown fields are refused.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RetrieveBranchWaitTimeRequest<'a> {
    /// 1 to 100 branches, each asked for once. `branch` is accepted as an alias.
    #[serde(alias = "branch", borrow)]
    #[schema(value_type = Vec<BranchItem>, required = true, min_items = 1, max_items = 100)]
    branches: Option<Vec<Object<BranchItem<'a>>>>,
}

/// Branch: a branch asked for.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Branch)]
struct BranchItem<'a> {
    /// Five digits: the branch's identifier.
    #[serde(rename = "branchId", borrow)]
    #[schema(value_type = String, required = true, pattern = "^[0-9]{5}$", example = "00042")]
    branch_id: Option<Text<'a>>,
}

/// A `T` read from a JSON object only. serde's derived structs also take an array of
/// their fields in order (`[[{"branchId":"00001"}]]` would be a request), which the
/// schema does not allow.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for ObjectVisitor<T> {
            type Value = T;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("an object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }

        deserializer.deserialize_map(ObjectVisitor(std::marker::PhantomData)).map(Object)
    }
}

/// A string read from the body without a copy when it holds no escapes. (serde borrows
/// a `Cow` field only when it is not wrapped, as in `Option`; wrapped, it copies.)
#[derive(Deserialize)]
#[serde(transparent)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// The branch ids of the body, in order, each failure located (`branches[3].branchId`).
fn branches_of(body: &[u8]) -> Result<Vec<BranchId>, BadRequest> {
    if let Some(ids) = plain_branch_ids(body) {
        return Ok(ids);
    }
    branches_read_by_serde(body)
}

/// The branch ids of a body in the one shape apps send, `{"branches":[{"branchId":
/// "00001"}, …]}` (or `branch`), 1 to 100 valid ids, JSON whitespace anywhere between
/// tokens, no escapes; `None` for anything else, which [`branches_read_by_serde`] then
/// reads and, when it is wrong, locates. A narrower reader in front of serde: serde's
/// derived visitor spent about 880 instructions an item, half of the 100-branch
/// operation (callgrind, issue 25), on generality this shape does not use. What it
/// accepts, serde accepts with the same ids (a test compares the two on mutated bodies).
fn plain_branch_ids(body: &[u8]) -> Option<Vec<BranchId>> {
    let mut json = PlainJson { bytes: body, at: 0 };
    json.token(b'{')?;
    json.literal(br#""branches""#).or_else(|| json.literal(br#""branch""#))?;
    json.token(b':')?;
    json.token(b'[')?;
    let mut ids = Vec::with_capacity(8);
    loop {
        json.token(b'{')?;
        json.literal(br#""branchId""#)?;
        json.token(b':')?;
        let id = std::str::from_utf8(json.string()?).ok()?;
        ids.push(BranchId::parse(id).ok()?);
        json.token(b'}')?;
        if ids.len() > MAX_BRANCHES_PER_REQUEST {
            return None;
        }
        match json.next_token()? {
            b',' => continue,
            b']' => break,
            _ => return None,
        }
    }
    json.token(b'}')?;
    json.skip_whitespace();
    (json.at == body.len()).then_some(ids)
}

/// A cursor over JSON text for [`plain_branch_ids`].
struct PlainJson<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> PlainJson<'a> {
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, consumed.
    fn next_token(&mut self) -> Option<u8> {
        self.skip_whitespace();
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    /// `expected` after whitespace, consumed.
    fn token(&mut self, expected: u8) -> Option<()> {
        (self.next_token()? == expected).then_some(())
    }

    /// `expected` (a key with its quotes) after whitespace, consumed.
    fn literal(&mut self, expected: &[u8]) -> Option<()> {
        self.skip_whitespace();
        let found = self.bytes.get(self.at..)?.starts_with(expected);
        found.then(|| self.at += expected.len())
    }

    /// A string after whitespace, without escapes or control characters: its bytes.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.token(b'"')?;
        let rest = self.bytes.get(self.at..)?;
        let length = rest.iter().position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
        if rest[length] != b'"' {
            return None;
        }
        self.at += length + 1;
        Some(&rest[..length])
    }
}

/// [`branches_of`] for any body: serde reads it, and a failure is located.
fn branches_read_by_serde(body: &[u8]) -> Result<Vec<BranchId>, BadRequest> {
    // Tracking the path costs an allocation per element; only a failed parse needs it.
    let Object(request): Object<RetrieveBranchWaitTimeRequest<'_>> =
        serde_json::from_slice(body).map_err(|_| located_parse_failure(body))?;
    let branches = request.branches.ok_or_else(|| BadRequest::new("branches", Message::Missing))?;
    match branches.len() {
        0 => return Err(BadRequest::new("branches", Message::NoBranches)),
        n if n > MAX_BRANCHES_PER_REQUEST => {
            return Err(BadRequest::new("branches", Message::TooManyBranches(MAX_BRANCHES_PER_REQUEST)));
        }
        _ => {}
    }
    // A plain loop: a failure is built only when there is one, and each id is pushed as
    // it is (no `Result` the size of a `BadRequest` per branch on the way).
    let mut ids = Vec::with_capacity(branches.len());
    for (index, item) in branches.iter().enumerate() {
        let location = || format!("branches[{index}].branchId");
        let Some(raw) = item.0.branch_id.as_ref() else {
            return Err(BadRequest::new(location(), Message::Missing));
        };
        match BranchId::parse(&raw.0) {
            Ok(id) => ids.push(id),
            Err(shape) => return Err(BadRequest::new(location(), Message::Malformed(shape))),
        }
    }
    Ok(ids)
}

/// Why a body did not parse, located by parsing it again with its path tracked.
fn located_parse_failure(body: &[u8]) -> BadRequest {
    let mut json = serde_json::Deserializer::from_slice(body);
    let parsed: Result<Object<RetrieveBranchWaitTimeRequest<'_>>, _> = serde_path_to_error::deserialize(&mut json);
    match parsed {
        Err(error) => BadRequest::new(wire_location(error.path()), Message::Body(error.inner().to_string())),
        // The document parsed; what follows it did not.
        Ok(_) => {
            let trailing = json.end().err().map_or_else(|| "invalid JSON".to_owned(), |error| error.to_string());
            BadRequest::new("body", Message::Body(trailing))
        }
    }
}

/// Longest key written into a location: the body's own keys are at most 8 characters,
/// and an unknown key is echoed in full by the message anyway.
const MAX_LOCATED_KEY: usize = 64;

/// Where a parse failure is, as the wire says it: the path serde tracked, up to its
/// first segment that is not a name or an index (issue 30). A failure inside an object's
/// key (a truncated or unquoted one) has no key yet, which serde_path_to_error writes
/// `?`; an empty key, or one holding `.`, `[` or other characters outside a name, cannot
/// be written in a path without misleading (`branches[0].`, `a.b`). Either way the fault
/// is in the object that holds the key, so that object is named (`branches[0]`), and the
/// outermost one is `body`.
fn wire_location(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    use std::fmt::Write as _;

    let is_name = |key: &str| {
        !key.is_empty()
            && key.len() <= MAX_LOCATED_KEY
            && key.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
    };
    let mut location = String::new();
    for segment in path.iter() {
        match segment {
            // An index names an element only after the name of its array.
            Segment::Seq { index } if !location.is_empty() => {
                let _ = write!(location, "[{index}]");
            }
            Segment::Map { key } if is_name(key) => {
                if !location.is_empty() {
                    location.push('.');
                }
                location.push_str(key);
            }
            _ => break,
        }
    }
    if location.is_empty() { "body".to_owned() } else { location }
}

// Written by `body`; serde writes the same JSON (a test compares them), which is what
// the OpenAPI document describes. (A doc comment here would be the schema's description.)
/// RetrieveBranchWaitTimeResponse.
#[derive(Serialize, ToSchema)]
#[schema(as = RetrieveBranchWaitTimeResponse)]
struct WaitTimeAnswer<'a> {
    /// The requested branches the bank knows, in request order.
    #[serde(serialize_with = "branch_infos")]
    #[schema(value_type = Vec<BranchInfo>)]
    branches: &'a [BranchWaitTime],
}

/// BranchInfo as documented (the spec's field names and rules).
#[derive(Serialize, ToSchema)]
#[schema(as = BranchInfo)]
struct BranchInfo {
    /// Five digits: the branch's identifier.
    #[serde(rename = "branchId", serialize_with = "as_text")]
    #[schema(value_type = String, pattern = "^[0-9]{5}$", example = "00042")]
    branch_id: BranchId,
    /// The estimated wait in whole minutes, as digits.
    #[serde(rename = "timeTaken", serialize_with = "as_text")]
    #[schema(value_type = String, pattern = "^[0-9]+$", example = "12")]
    time_taken: u16,
}

impl BranchInfo {
    fn of(known: &BranchWaitTime) -> Self {
        Self { branch_id: known.branch, time_taken: known.wait.minutes() }
    }
}

/// A value as a JSON string of its text.
fn as_text<S: serde::Serializer>(value: &impl std::fmt::Display, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

fn branch_infos<S: serde::Serializer>(known: &&[BranchWaitTime], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(known.iter().map(BranchInfo::of))
}

impl WaitTimeAnswer<'_> {
    /// The answer's JSON, written directly: every value is a string of ASCII digits,
    /// which JSON needs no escaping for, and a general serializer spent a third of the
    /// operation's instructions checking that (callgrind, 100 branches).
    fn body(&self) -> Vec<u8> {
        const OPEN: &[u8] = br#"{"branches":["#;
        const ITEM: usize = r#"{"branchId":"00000","timeTaken":"1440"},"#.len();
        let mut body = Vec::with_capacity(OPEN.len() + self.branches.len() * ITEM + 2);
        body.extend_from_slice(OPEN);
        let mut minutes = itoa::Buffer::new();
        for (index, known) in self.branches.iter().enumerate() {
            let info = BranchInfo::of(known);
            if index > 0 {
                body.push(b',');
            }
            body.extend_from_slice(br#"{"branchId":""#);
            body.extend_from_slice(info.branch_id.digits().as_bytes());
            body.extend_from_slice(br#"","timeTaken":""#);
            body.extend_from_slice(minutes.format(info.time_taken).as_bytes());
            body.extend_from_slice(br#""}"#);
        }
        body.extend_from_slice(b"]}");
        body
    }
}

/// The answer to a retrieval of `known`.
fn response_body(known: &[BranchWaitTime]) -> Vec<u8> {
    WaitTimeAnswer { branches: known }.body()
}

/// The checks before the body: headers the spec requires, in the order a caller fixes
/// them (correlation id, credentials, then the rest).
fn headers_of(request: &HttpRequest) -> Result<(ChannelScope, SessionId), BadRequest> {
    let headers = request.headers();
    if !accepts_json_header(headers)? {
        return Err(BadRequest::new("Accept", Message::Accept));
    }
    if !is_json_content_type(required_header(headers, &CONTENT_TYPE)?) {
        return Err(BadRequest::new(CONTENT_TYPE.name, Message::ContentType));
    }
    let scope = ChannelScope {
        country: parsed_header(headers, &COUNTRY_CODE, CountryCode::parse)?,
        business: parsed_header(headers, &BUSINESS_CODE, BusinessCode::parse)?,
        channel: parsed_header(headers, &CHANNEL_ID, ChannelId::parse)?,
    };
    let session = parsed_header(headers, &SESSION_ID, SessionId::parse)?;
    Ok((scope, session))
}

/// Estimated wait per branch, in request order; unknown branches are left out.
#[utoipa::path(
    post,
    path = "/v1/open-banking/channels/branch/waittime/retrieve",
    tag = "Branches",
    operation_id = "retrieveBranchWaitTime",
    summary = "Estimated wait time by branch",
    security(("bearer" = []), ("dpop" = [])),
    params(
        BearerHeaders,
        Correlation,
        ("Accept" = String, Header, pattern = "^ *(application/json|application/\\*|\\*/\\*) *(; *charset=[A-Za-z0-9_-]+ *)?(,.*)?$", description = "Must allow `application/json` (also `application/*` or `*/*`)."),
        ("countryCode" = String, Header, pattern = "^[A-Z]{2}$", description = "ISO 3166-1 alpha-2 country code."),
        ("businessCode" = String, Header, pattern = "^[A-Za-z0-9]{1,16}$", description = "The business code identified at registration."),
        ("ChannelId" = String, Header, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "The channel the request comes from."),
        ("sid" = String, Header, pattern = "^[A-Za-z0-9_-]{16,128}$", description = "The session id returned by /v1/authorize for this token."),
        ErrorLanguage,
    ),
    request_body(content = RetrieveBranchWaitTimeRequest, content_type = "application/json", description = "The branches, 1 to 100, each once."),
    responses(
        (status = 200, description = "The known branches' estimates, in request order.", body = WaitTimeAnswer, headers(
            ("uuid" = String, description = "The request's `uuid` header."),
        )),
        (status = 400, description = "A required header is missing or invalid, or the body is; `location` names it.", body = ErrorResponse),
        (status = 401, description = "Token, its DPoP proof, `client_id` or `sid` missing or invalid.", body = ErrorResponse,
            headers(("WWW-Authenticate" = String, description = "The scheme the request used: `Bearer` (with `error=\"invalid_token\"` for a refused token), or `DPoP` with `algs` (with `error=\"invalid_token\"`, `\"invalid_dpop_proof\"` for a refused proof, or `\"use_dpop_nonce\"`)."),
                ("DPoP-Nonce" = String, description = "With `use_dpop_nonce`: the nonce to put in the next proof (`serve --dpop-nonce`)."))),
        (status = 403, description = "The channel, country or business is not supported.", body = ErrorResponse),
        (status = 404, description = "None of the branches is known.", body = ErrorResponse),
        (status = 405, description = "Method not allowed.", body = ErrorResponse),
        (status = 422, description = "A branch is asked for more than once.", body = ErrorResponse),
        (status = 429, description = "Over the session's, the caller address's or the client's request rate.", body = ErrorResponse,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
        (status = 500, description = "Server unavailable.", body = ErrorResponse),
    ),
)]
///
/// Responses: 200 RetrieveBranchWaitTimeResponse; 400 `invalidRequest` (a required
/// header missing or malformed, or a bad body; `location` names it); 401 `unAuthorized`
/// (bearer token or `sid`); 403 `accessNotConfigured`; 404 `resourceNotFound` (no
/// branch known); 422 `businessValidationFailed` (a branch twice); 429 `tooManyRequests`
/// (session, caller address or client over its rate; `Retry-After`); 500 `serverUnavailable`.
pub async fn retrieve(request: HttpRequest, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    answer::<WaitTimes>(
        &request,
        async {
            let state = AppState::of(&request)?;
            // 1. Extract: correlation id and credentials first, then the other headers and body.
            let headers = request.headers();
            require_uuid(headers)?;
            let claims = authenticate(state, &request).await?;
            let (scope, session) = headers_of(&request)?;
            // 2. Domain values.
            let body = read_body(headers, payload, state.body_timeout).await?;
            let query = WaitTimeQuery { scope, session, branches: branches_of(&body)? };
            // 3. Call the use case.
            let known = state.wait_times.retrieve(&claims, &query).await?;
            // 4. Map to the wire.
            Ok(HttpResponse::Ok()
                .content_type(mime_json())
                .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
                .body(response_body(&known)))
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::branch::WaitTime;

    #[test]
    fn the_samples_branch_key_is_read_like_branches() {
        let ids = branches_of(br#"{"branch":[{"branchId":"00042"}]}"#).unwrap();
        assert_eq!(ids[0].to_string(), "00042");
    }

    #[test]
    fn a_bad_id_is_located_by_its_position() {
        let failure = branches_of(br#"{"branches":[{"branchId":"00001"},{"branchId":"1"}]}"#).unwrap_err();
        assert_eq!(Some(failure.location.as_str()), Some("branches[1].branchId"));
    }

    #[test]
    fn a_missing_branch_id_is_located_at_the_field_not_its_object() {
        let failure = branches_of(br#"{"branches":[{"branchId":"00001"},{}]}"#).unwrap_err();
        assert_eq!(Some(failure.location.as_str()), Some("branches[1].branchId"));
        assert_eq!(Some(branches_of(br#"{}"#).unwrap_err().location.as_str()), Some("branches"));
    }

    #[test]
    fn a_number_where_a_string_belongs_is_located_too() {
        let failure = branches_of(br#"{"branches":[{"branchId":12345}]}"#).unwrap_err();
        assert_eq!(Some(failure.location.as_str()), Some("branches[0].branchId"));
    }

    #[test]
    fn unknown_fields_and_trailing_garbage_are_refused() {
        assert!(branches_of(br#"{"branches":[{"branchId":"00001"}],"x":1}"#).is_err());
        assert!(branches_of(br#"{"branches":[{"branchId":"00001","x":1}]}"#).is_err());
        assert!(branches_of(br#"{"branches":[{"branchId":"00001"}]} {}"#).is_err());
    }

    /// Bodies around the plain shape: whitespace, escapes, other keys, other types,
    /// counts at and past the limit, truncations.
    fn bodies() -> Vec<Vec<u8>> {
        let items = |n: usize| (1..=n).map(|i| format!(r#"{{"branchId":"{i:05}"}}"#)).collect::<Vec<_>>().join(",");
        let mut bodies: Vec<Vec<u8>> = [
            r#"{"branches":[{"branchId":"00001"}]}"#.to_owned(),
            r#" { "branch" : [ { "branchId" : "00001" } , {"branchId":"00002"} ] } "#.to_owned(),
            "{\"branches\":\t[\r\n{\"branchId\":\"00001\"}]}\n".to_owned(),
            r#"{"branches":[{"branchId":"0000\u0031"}]}"#.to_owned(),
            r#"{"branches":[{"branch\u0049d":"00001"}]}"#.to_owned(),
            r#"{"branches":[{"branchId":"00001"},{"branchId":"00001"}]}"#.to_owned(),
            r#"{"branches":[]}"#.to_owned(),
            r#"{"branches":[{"branchId":"00001"},]}"#.to_owned(),
            r#"{"branches":[{"branchId":"0001"}]}"#.to_owned(),
            r#"{"branches":[{"branchId":00001}]}"#.to_owned(),
            r#"{"branches":[{"branchId":"00001"}],"branches":[]}"#.to_owned(),
            r#"{"branches":[{"branchId":"00001","branchId":"00002"}]}"#.to_owned(),
            r#"[{"branches":[{"branchId":"00001"}]}]"#.to_owned(),
            r#"{"branches":[[{"branchId":"00001"}]]}"#.to_owned(),
            "\u{feff}{\"branches\":[{\"branchId\":\"00001\"}]}".to_owned(),
            "{\"branches\":[{\"branchId\":\"00001\"}]}\u{a0}".to_owned(),
            format!(r#"{{"branches":[{}]}}"#, items(100)),
            format!(r#"{{"branches":[{}]}}"#, items(101)),
        ]
        .into_iter()
        .map(String::into_bytes)
        .collect();
        let whole = format!(r#"{{"branches":[{}]}}"#, items(3)).into_bytes();
        bodies.extend((0..whole.len()).map(|end| whole[..end].to_vec()));
        bodies
    }

    /// A body with one byte changed, removed or doubled, chosen by a fixed seed.
    fn mutations(body: &[u8], seed: u64) -> Vec<Vec<u8>> {
        let alphabet = b" \t\n{}[]:,\"\\0159abuIdrhcnes\x00\x1f\x7f\xc3";
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        (0..400)
            .map(|_| {
                let mut changed = body.to_vec();
                let at = next() % changed.len();
                match next() % 3 {
                    0 => changed[at] = alphabet[next() % alphabet.len()],
                    1 => {
                        changed.remove(at);
                    }
                    _ => changed.insert(at, changed[at]),
                }
                changed
            })
            .collect()
    }

    #[test]
    fn the_plain_reader_accepts_only_what_serde_reads_the_same() {
        let mut bodies = bodies();
        let seeds: Vec<Vec<u8>> = bodies.iter().take(3).cloned().collect();
        for (seed, body) in seeds.iter().enumerate() {
            bodies.extend(mutations(body, seed as u64 + 1));
        }
        let mut plain = 0;
        for body in &bodies {
            if let Some(ids) = plain_branch_ids(body) {
                plain += 1;
                let by_serde = branches_read_by_serde(body).map_err(|bad| bad.location);
                assert_eq!(Ok(ids), by_serde, "{}", String::from_utf8_lossy(body));
            }
        }
        // The reader is used: the plain bodies, whitespace and the 100-branch one.
        assert!(plain >= 5, "{plain} bodies read plainly");
        assert_eq!(
            plain_branch_ids(br#"{"branches":[{"branchId":"00001"},{"branchId":"00001"}]}"#).map(|ids| ids.len()),
            Some(2)
        );
        assert_eq!(plain_branch_ids(br#"{"branches":[{"branchId":"0000\u0031"}]}"#), None);
        assert_eq!(plain_branch_ids(br#"{"branches":[]}"#), None);
    }

    /// Whether `location` is what a caller can act on: `body`, or a path of names and
    /// indexes from the body's root (`branches[3].branchId`): no `?`, no empty name, no
    /// trailing dot.
    fn is_well_formed_location(location: &str) -> bool {
        fn name_length(text: &str) -> usize {
            text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(text.len())
        }
        if location == "body" {
            return true;
        }
        let first = name_length(location);
        if first == 0 {
            return false;
        }
        let mut rest = &location[first..];
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let length = name_length(after);
                if length == 0 {
                    return false;
                }
                rest = &after[length..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let digits = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
                if digits == 0 || !after[digits..].starts_with(']') {
                    return false;
                }
                rest = &after[digits + 1..];
            } else {
                return false;
            }
        }
        true
    }

    #[test]
    fn the_location_checker_refuses_the_probes_placeholders() {
        for good in ["body", "branches", "branches[0]", "branches[12].branchId", "branch"] {
            assert!(is_well_formed_location(good), "{good}");
        }
        for bad in ["?", "", "branches[0].?", "branches[0].", ".", "branches..x", "[0]", "branches[]", "a b"] {
            assert!(!is_well_formed_location(bad), "{bad:?}");
        }
    }

    /// The probe's finding (issue 30): a fifth of the 400s for JSON syntax errors said
    /// `?`, `""`, `branches[0].?` or `branches[0].`, the placeholders of a path whose
    /// last key was not read yet, or was empty.
    #[test]
    fn a_syntax_error_inside_a_key_is_located_at_its_object_never_at_a_placeholder() {
        let located = |body: &str| branches_of(body.as_bytes()).unwrap_err().location;
        assert_eq!(located(r#"{"bran"#), "body");
        assert_eq!(located(r#"{"branches":[{"branchId":"00001"}]"#), "body");
        assert_eq!(located(r#"{"branches":[{"branchId":"00001"}],"#), "body");
        assert_eq!(located(r#"{"":[]}"#), "body");
        assert_eq!(located(r#"{"branches":[{"bra"#), "branches[0]");
        assert_eq!(located(r#"{"branches":[{"branchId":"00001"},{"#), "branches[1]");
        assert_eq!(located(r#"{"branches":[{"":"00001"}]}"#), "branches[0]");
        assert_eq!(located(r#"{"branches":[{"a.b":"00001"}]}"#), "branches[0]");
        // Where the path is real, it is kept.
        assert_eq!(located(r#"{"branches":[{"branchId":"0000"#), "branches[0].branchId");
        assert_eq!(located(r#"{"branches":[{"branchId":"00001"},]}"#), "branches");
        assert_eq!(located(r#"{"branches":[{"branchId":"00001","other":1}]}"#), "branches[0].other");
    }

    /// Every failing body, whichever way it was cut or changed, is located at `body` or
    /// at a well-formed path.
    #[test]
    fn every_failure_over_many_truncated_and_mutated_bodies_has_a_well_formed_location() {
        // The whole bodies of `bodies()`, not its truncations: every seed is cut here.
        let mut seeds: Vec<Vec<u8>> = bodies().into_iter().take_while(|body| !body.is_empty()).collect();
        seeds.extend(
            [
                r#"{"branches":[{"branchId":"00001"},{"branchId":"00002"},{"branchId":"00003"}]}"#,
                r#" { "branch" : [ { "branchId" : "00001" } , { "branchId" : "00002" } ] } "#,
                r#"{"branches":[{"branchId":"00001","":"x"}],"":[{"":""}]}"#,
            ]
            .map(|body| body.as_bytes().to_vec()),
        );
        let mut bodies = Vec::new();
        // The long bodies (100 and 101 branches) add time, not shapes.
        for (n, seed) in seeds.iter().enumerate().filter(|(_, seed)| !seed.is_empty() && seed.len() < 200) {
            bodies.extend((0..seed.len()).map(|end| seed[..end].to_vec()));
            for changed in mutations(seed, n as u64 + 101) {
                if changed.is_empty() {
                    continue;
                }
                // Changed twice, and cut where the first change left it ends.
                let again = mutations(&changed, n as u64 + 7).swap_remove(n % 400);
                bodies.push(changed[..changed.len() / 2 + n % (changed.len() / 2 + 1)].to_vec());
                bodies.push(changed);
                bodies.push(again);
            }
        }
        let mut failures = 0;
        for body in &bodies {
            if let Err(failure) = branches_of(body) {
                failures += 1;
                assert!(
                    is_well_formed_location(&failure.location),
                    "{:?} located at {:?}",
                    String::from_utf8_lossy(body),
                    failure.location
                );
            }
        }
        assert!(failures > 5_000, "only {failures} failing bodies of {}", bodies.len());
    }

    #[test]
    fn the_response_is_the_specs_shape_with_time_taken_spelled_right() {
        let known =
            [BranchWaitTime { branch: BranchId::parse("00042").unwrap(), wait: WaitTime::from_minutes(7).unwrap() }];
        let body: serde_json::Value = serde_json::from_slice(&response_body(&known)).unwrap();
        assert_eq!(body, serde_json::json!({"branches": [{"branchId": "00042", "timeTaken": "7"}]}));
    }

    #[test]
    fn the_written_response_is_json_of_every_entry_in_order() {
        let entry = |branch: usize, minutes: u32| BranchWaitTime {
            branch: BranchId::from_index(branch).unwrap(),
            wait: WaitTime::from_minutes(minutes).unwrap(),
        };
        let known: Vec<_> = (0..100).map(|i| entry(i * 1010, (i as u32 * 97) % 1441)).collect();
        let body: serde_json::Value = serde_json::from_slice(&response_body(&known)).unwrap();
        let expected: Vec<_> = known
            .iter()
            .map(|e| serde_json::json!({"branchId": e.branch.to_string(), "timeTaken": e.wait.to_string()}))
            .collect();
        assert_eq!(body, serde_json::json!({ "branches": expected }));
        let serde = serde_json::to_vec(&WaitTimeAnswer { branches: &known }).unwrap();
        assert_eq!(response_body(&known), serde, "the document's types, as serde writes them");
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&response_body(&[])).unwrap()["branches"],
            serde_json::json!([])
        );
    }
}
