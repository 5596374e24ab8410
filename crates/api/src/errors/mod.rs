//! Every error the HTTP layer answers, in one place: how each domain error becomes an
//! operation's wire failure (status, `code`, text, location, headers), and how a failure
//! is written in the body shape of its operation (the spec gives the wait-time, token and
//! ATM operations different bodies).
//!
//! A failure is typed by its operation ([`Failure<Op>`]), so the same domain error can
//! answer differently where the spec says so (an outage is a 500 for tokens and wait
//! times, a 503 with `Retry-After` for ATMs) and still be decided once: each `From` below
//! is the only place its status is chosen, and nothing rewrites it afterwards. Handlers
//! convert with `into()` and never choose a status. What the log and the metrics should
//! know of a failure rides along as its [`Note`], for the one observer
//! ([`crate::observe`]) to record. The texts are in [`crate::texts`]; the bodies in
//! [`bodies`].

pub mod bodies;

use std::marker::PhantomData;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use domain::dpop::ProofRefusal;
use domain::limits::LimitExceeded;
use domain::ports::TokenRejected;
use domain::services::atm_feed::FeedError;
use domain::services::atms::ListAtmsError;
use domain::services::authorize::AuthorizeError;
use domain::services::bearer::BearerError;
use domain::services::posts::PostEventsError;
use domain::services::revocation::RevocationError;
use domain::services::systems::{SystemBearerError, SystemTokenError};
use domain::services::wait_times::RetrieveWaitTimesError;

pub use crate::texts::Message;
use crate::texts::{Language, obie_title};
use bodies::{ErrorResponseBody, OAuthErrorBody, ObieErrorBody, TokenErrorBody, timestamp};

use crate::headers::SentTwice;

/// The wire `code` values (spec: Errors; docs/contract.md for the token endpoint).
pub mod code {
    /// 400: missing or invalid parameters.
    pub const INVALID_REQUEST: &str = "invalidRequest";
    /// 401: credentials missing or invalid.
    pub const UNAUTHORIZED: &str = "unAuthorized";
    /// 403: channel, country or business not supported.
    pub const ACCESS_NOT_CONFIGURED: &str = "accessNotConfigured";
    /// 404: resource not found.
    pub const RESOURCE_NOT_FOUND: &str = "resourceNotFound";
    /// 405: method not allowed on an existing path (not in the spec; docs/contract.md).
    pub const METHOD_NOT_ALLOWED: &str = "methodNotAllowed";
    /// 422: business validation failed.
    pub const BUSINESS_VALIDATION_FAILED: &str = "businessValidationFailed";
    /// 429: too many requests (the ATM body has no code; the others carry it).
    pub const TOO_MANY_REQUESTS: &str = "tooManyRequests";
    /// 500: internal error or server unavailable.
    pub const SERVER_UNAVAILABLE: &str = "serverUnavailable";
    /// 400 of the revocation endpoint (RFC 6749 §5.2): `client_id` names no active client.
    pub const INVALID_CLIENT: &str = "invalid_client";
    /// 400 of the revocation endpoint (RFC 7009 §2.1): the token is another client's.
    pub const UNAUTHORIZED_CLIENT: &str = "unauthorized_client";
    /// 400 of the token endpoint (RFC 6749 §5.2): a grant type other than client credentials.
    pub const UNSUPPORTED_GRANT_TYPE: &str = "unsupported_grant_type";
    /// 400 of the token endpoint (RFC 6749 §5.2): a scope the system may not have.
    pub const INVALID_SCOPE: &str = "invalid_scope";
    /// 403 of the systems' operations (RFC 6750 §3.1): the token lacks the scope.
    pub const INSUFFICIENT_SCOPE: &str = "insufficientScope";
    /// 410 of the ATMs' change feed: the cursor is older than the changes kept; start
    /// again without one.
    pub const CURSOR_EXPIRED: &str = "cursorExpired";
}

/// The RFC 6749 §5.2 `error` of a failure with wire `code` (the revocation endpoint's
/// body): the codes the endpoints share become the RFC's nearest, the RFC's own pass.
fn oauth_error(code: &'static str) -> &'static str {
    match code {
        code::INVALID_REQUEST | code::METHOD_NOT_ALLOWED | code::RESOURCE_NOT_FOUND => "invalid_request",
        // RFC 6749 §4.1.2.1: "temporarily unable to handle the request due to a
        // temporary overloading or maintenance"; `Retry-After` says when to come back.
        code::TOO_MANY_REQUESTS | code::SERVER_UNAVAILABLE => "temporarily_unavailable",
        own => own,
    }
}

/// `text` as RFC 6749 §5.2 allows in `error_description`: printable ASCII without `"`
/// or `\`; anything else becomes `?`.
fn oauth_description(text: &str) -> String {
    text.chars().map(|c| if matches!(c, ' '..='~') && c != '"' && c != '\\' { c } else { '?' }).collect()
}

/// How long a client is asked to wait when the service cannot answer, where the
/// operation sends `Retry-After` with its outage (ATMs: docs/contract.md; revocation:
/// RFC 7009 §2.2.1).
const OUTAGE_RETRY_AFTER_SECONDS: u64 = 5;

/// Which body shape an error takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// ErrorResponse: `type`, `code`, `details`, `location`, `uuid`, `timestamp`.
    ErrorResponse,
    /// The token endpoint's body: `code`, `details`, `location`, `timestamp`.
    Token,
    /// The ATM endpoint's body (OBIE): `status`, `title`, `description`, texts fixed per
    /// status.
    Obie,
    /// RFC 6749 §5.2's body (the revocation endpoint): `error`, `error_description`, in
    /// English (the RFC allows ASCII only).
    OAuth,
}

/// An operation, as its errors see it: the body shape its failures take, and how it
/// answers when the service cannot.
pub trait Operation {
    /// The body shape of its failures.
    const SHAPE: Shape;
    /// The operation's name where refusals are counted (`authorize`, `bearer`).
    const REFUSALS: &'static str;
    /// Its answer when the service cannot answer (a store unreachable, a key missing).
    fn outage() -> Failure<Self>
    where
        Self: Sized;
}

/// GET /v1/authorize.
#[derive(Debug)]
pub enum Authorize {}
/// POST …/branch/waittime/retrieve.
#[derive(Debug)]
pub enum WaitTimes {}
/// GET /v1/atms.
#[derive(Debug)]
pub enum Atms {}
/// GET /v1/atms/changes: ErrorResponse bodies (its 410 carries a `code`).
#[derive(Debug)]
pub enum AtmChanges {}
/// POST /v1/revoke (RFC 7009).
#[derive(Debug)]
pub enum Revoke {}
/// POST /v1/token (the bank's systems: client credentials, RFC 6749 §4.4).
#[derive(Debug)]
pub enum SystemToken {}
/// The bank's systems' posts of events: POST /v1/branches/queue-events (queue systems)
/// and /v1/atms/state-events (the ATM monitoring).
#[derive(Debug)]
pub enum SystemPosts {}
/// Everything else under `/api` (the JWKS, the documents, health, unknown paths).
#[derive(Debug)]
pub enum Meta {}

impl Operation for Authorize {
    const SHAPE: Shape = Shape::Token;
    const REFUSALS: &'static str = "authorize";
    fn outage() -> Failure<Self> {
        Failure::server_unavailable()
    }
}

impl Operation for WaitTimes {
    const SHAPE: Shape = Shape::ErrorResponse;
    const REFUSALS: &'static str = "bearer";
    fn outage() -> Failure<Self> {
        Failure::server_unavailable()
    }
}

impl Operation for Atms {
    const SHAPE: Shape = Shape::Obie;
    const REFUSALS: &'static str = "bearer";
    /// 503 with `Retry-After` (docs/contract.md).
    fn outage() -> Failure<Self> {
        Failure::retry_later()
    }
}

impl Operation for AtmChanges {
    const SHAPE: Shape = Shape::ErrorResponse;
    const REFUSALS: &'static str = "bearer";
    /// 503 with `Retry-After`, as the ATM pages.
    fn outage() -> Failure<Self> {
        Failure::retry_later()
    }
}

impl Operation for Revoke {
    const SHAPE: Shape = Shape::OAuth;
    const REFUSALS: &'static str = "revoke";
    /// 503 with `Retry-After`: RFC 7009 §2.2.1's answer when the token could not be
    /// revoked (the app should assume it is still valid, and try again).
    fn outage() -> Failure<Self> {
        Failure::retry_later()
    }
}

impl Operation for SystemToken {
    const SHAPE: Shape = Shape::OAuth;
    const REFUSALS: &'static str = "system token";
    /// 503 with `Retry-After`, `temporarily_unavailable`: a system asks again.
    fn outage() -> Failure<Self> {
        Failure {
            status: StatusCode::SERVICE_UNAVAILABLE,
            retry_after: Some(OUTAGE_RETRY_AFTER_SECONDS),
            ..Failure::server_unavailable()
        }
    }
}

impl Operation for SystemPosts {
    const SHAPE: Shape = Shape::ErrorResponse;
    const REFUSALS: &'static str = "system bearer";
    /// 503 with `Retry-After`: nothing was stored, and the system sends the post again.
    fn outage() -> Failure<Self> {
        Failure {
            status: StatusCode::SERVICE_UNAVAILABLE,
            retry_after: Some(OUTAGE_RETRY_AFTER_SECONDS),
            ..Failure::server_unavailable()
        }
    }
}

impl Operation for Meta {
    const SHAPE: Shape = Shape::ErrorResponse;
    const REFUSALS: &'static str = "meta";
    fn outage() -> Failure<Self> {
        Failure::server_unavailable()
    }
}

/// The `WWW-Authenticate` challenge of a 401 on a bearer operation (RFC 6750 §3, RFC
/// 9449 §7.1), in the scheme the request used (`DPoP` when its `Authorization` header
/// is, else `Bearer`), but for a proof's refusal, which is always `DPoP`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenge {
    /// No credentials were sent: the scheme alone (RFC 6750 §3: no error code then).
    Bearer,
    /// The `Authorization` header is not `Bearer <token>` (`invalid_request`).
    InvalidRequest(&'static str),
    /// The token is expired, revoked or otherwise not valid (`invalid_token`).
    InvalidToken(&'static str),
    /// The DPoP proof was refused: `invalid_dpop_proof`, or `use_dpop_nonce` (RFC 9449
    /// §7.1, §9), with the code and a description.
    Proof(&'static str, &'static str),
    /// A bank system's assertion was refused at the token endpoint (RFC 6749 §5.2
    /// `invalid_client`, 401): no HTTP scheme authenticates a `private_key_jwt` client,
    /// so the challenge names the one its tokens are used with.
    InvalidClient,
    /// A system's token without the scope the operation needs (RFC 6750 §3.1, 403).
    InsufficientScope(&'static str),
}

/// The proof algorithms, as a `DPoP` challenge lists them (RFC 9449 §7.1).
const ALGS: &str = "ES256 EdDSA Ed25519";

impl Challenge {
    /// The header's value, in the `DPoP` scheme when `dpop` (the request's own scheme).
    /// The descriptions are this module's constants: plain ASCII without quotes, as RFC
    /// 6750 §3 allows in `error_description`.
    fn header_value(self, dpop: bool) -> HeaderValue {
        let (error, description) = match self {
            Self::Bearer if dpop => return HeaderValue::from_static(r#"DPoP algs="ES256 EdDSA Ed25519""#),
            Self::Bearer => return HeaderValue::from_static("Bearer"),
            Self::InvalidClient => return HeaderValue::from_static(r#"Bearer error="invalid_client""#),
            Self::InsufficientScope(scope) => {
                return HeaderValue::from_str(&format!(r#"Bearer error="insufficient_scope", scope="{scope}""#))
                    .unwrap_or(HeaderValue::from_static("Bearer"));
            }
            Self::InvalidRequest(description) => ("invalid_request", description),
            Self::InvalidToken(description) => ("invalid_token", description),
            Self::Proof(error, description) => {
                return HeaderValue::from_str(&format!(
                    r#"DPoP error="{error}", error_description="{description}", algs="{ALGS}""#
                ))
                .unwrap_or(HeaderValue::from_static("DPoP"));
            }
        };
        let value = if dpop {
            format!(r#"DPoP error="{error}", error_description="{description}", algs="{ALGS}""#)
        } else {
            format!(r#"Bearer error="{error}", error_description="{description}""#)
        };
        HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("Bearer"))
    }
}

/// The `error_description` of each bearer refusal: it tells an expired token from one
/// that is not valid, and nothing more (docs/security.md says why).
mod describe {
    /// The token expired.
    pub const EXPIRED: &str = "The access token expired";
    /// Any other refusal of the token or the client id it came with.
    pub const INVALID: &str = "The access token is not valid";
    /// The token is valid but not for the session named by sid.
    pub const OTHER_SESSION: &str = "The access token was not issued for this session";
    /// The Authorization header is not `Bearer <token>`.
    pub const MALFORMED: &str = "The Authorization header must be Bearer followed by one space and the token";
    /// The DPoP proof was refused (the body says why).
    pub const PROOF: &str = "The DPoP proof is not valid";
    /// The DPoP proof carries no recent nonce of the server's.
    pub const NONCE: &str = "Resend with the nonce in the DPoP-Nonce header";
}

/// What the log and the metrics should know of a failure; never sent to the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Note {
    /// Nothing beyond the status (a malformed request, an unknown path).
    #[default]
    Plain,
    /// Credentials refused: the operation's name and the reason, for the log and the
    /// refusals metric.
    Refused {
        /// `authorize` or `bearer`.
        operation: &'static str,
        /// Why, in a few words (the metric's label).
        reason: &'static str,
    },
    /// Over the request limit of this name.
    RateLimited(&'static str),
    /// The service could not answer: what failed (the same words for every request that
    /// fails the same way, so that the log can count them) and the cause, for an ERROR
    /// line.
    Failed {
        /// What could not be done, such as `token issuance failed`.
        what: &'static str,
        /// Why, from the store or the signer.
        cause: String,
    },
}

/// A failure of operation `Op` before it is written: status, wire code, message,
/// location, the headers it needs, and what the observer should note.
#[derive(Debug)]
pub struct Failure<Op> {
    /// HTTP status.
    pub status: StatusCode,
    /// Wire `code`.
    pub code: &'static str,
    /// What to tell the caller.
    pub message: Message,
    /// The header, parameter or body field at fault.
    pub location: Option<String>,
    /// Adds `WWW-Authenticate` (RFC 6750 §3).
    pub challenge: Option<Challenge>,
    /// Adds `Retry-After` (RFC 9110 §10.2.3), in seconds.
    pub retry_after: Option<u64>,
    /// The nonce a proof must carry (RFC 9449 §8), sent as `DPoP-Nonce` by
    /// [`crate::dpop::Nonces`].
    pub dpop_nonce: Option<String>,
    /// For the log and the metrics.
    pub note: Note,
    operation: PhantomData<fn() -> Op>,
}

impl<Op> Failure<Op> {
    fn new(status: StatusCode, code: &'static str, message: Message) -> Self {
        Self {
            status,
            code,
            message,
            location: None,
            challenge: None,
            retry_after: None,
            dpop_nonce: None,
            note: Note::Plain,
            operation: PhantomData,
        }
    }

    fn server_unavailable() -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, code::SERVER_UNAVAILABLE, Message::ServerUnavailable)
    }

    /// 503 `serverUnavailable` with `Retry-After`: the outage of the operations that ask
    /// the caller to come back (the ATM reads, revocation).
    fn retry_later() -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            retry_after: Some(OUTAGE_RETRY_AFTER_SECONDS),
            ..Self::server_unavailable()
        }
    }

    fn noted(self, note: Note) -> Self {
        Self { note, ..self }
    }

    /// 401 `unAuthorized` with its `Bearer` challenge: the bearer token, its `client_id`
    /// or `sid` refused, said as `message`.
    fn bearer_refused(operation: &'static str, reason: &'static str, message: Message, challenge: Challenge) -> Self {
        Self {
            challenge: Some(challenge),
            ..Self::new(StatusCode::UNAUTHORIZED, code::UNAUTHORIZED, message)
                .noted(Note::Refused { operation, reason })
        }
    }
}

impl<Op: Operation> Failure<Op> {
    /// The operation's outage answer, with `cause` for the log.
    fn outage_because(what: &'static str, cause: impl std::fmt::Display) -> Self {
        Op::outage().noted(Note::Failed { what, cause: cause.to_string() })
    }

    /// An answer that could not be written (a value the service made that does not fit
    /// the wire): the operation's outage answer.
    pub fn unwritable(cause: impl std::fmt::Display) -> Self {
        Self::outage_because("the answer could not be written", cause)
    }

    /// The service was assembled without what the operation needs (a wiring fault, never
    /// a caller's): the operation's outage answer.
    pub fn unwired(cause: impl std::fmt::Display) -> Self {
        Self::outage_because("the service is not wired for this operation", cause)
    }
}

/// The application was assembled without the state an operation needs (a wiring fault,
/// never a caller's): what is missing. Each operation answers it as its outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unwired(pub &'static str);

impl<Op: Operation> From<Unwired> for Failure<Op> {
    fn from(Unwired(missing): Unwired) -> Self {
        Self::unwired(missing)
    }
}

/// A request that cannot be understood: a header, parameter or body field missing or
/// malformed (400 `invalidRequest` at its location).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRequest {
    /// The header, parameter or body field at fault.
    pub location: String,
    /// What is wrong with it.
    pub message: Message,
}

impl BadRequest {
    /// `location` is wrong as `message` says.
    pub fn new(location: impl Into<String>, message: Message) -> Self {
        Self { location: location.into(), message }
    }
}

impl From<SentTwice> for BadRequest {
    fn from(SentTwice(name): SentTwice) -> Self {
        Self::new(name, Message::RepeatedHeader)
    }
}

/// Why a bearer-protected request did not get through its bearer check.
#[derive(Debug)]
pub enum Unauthenticated {
    /// No `Authorization` header (401).
    NoToken,
    /// An `Authorization` header that is not `Bearer <token>`, or sent twice (401).
    MalformedHeader,
    /// The domain refused the token (401) or could not check it.
    Bearer(BearerError),
    /// The `client_id` header is missing or malformed (400).
    BadRequest(BadRequest),
}

/// Neither a route nor a method of one: 404 for an unknown path, 405 for a method the
/// resource does not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRoute {
    /// No such path.
    Path,
    /// The path exists; the method does not.
    Method,
}

impl<Op> From<BadRequest> for Failure<Op> {
    fn from(bad: BadRequest) -> Self {
        Self { location: Some(bad.location), ..Self::new(StatusCode::BAD_REQUEST, code::INVALID_REQUEST, bad.message) }
    }
}

impl<Op> From<LimitExceeded> for Failure<Op> {
    fn from(over: LimitExceeded) -> Self {
        Self {
            retry_after: Some(whole_seconds(over.wait)),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, code::TOO_MANY_REQUESTS, Message::TooManyRequests)
                .noted(Note::RateLimited(over.limit.name()))
        }
    }
}

/// `Retry-After` is whole seconds: round up, and never 0 (that would invite a retry
/// that is refused again).
fn whole_seconds(wait: std::time::Duration) -> u64 {
    (wait.as_secs_f64().ceil() as u64).max(1)
}

impl<Op> From<NoRoute> for Failure<Op> {
    fn from(missing: NoRoute) -> Self {
        match missing {
            NoRoute::Path => Self::new(StatusCode::NOT_FOUND, code::RESOURCE_NOT_FOUND, Message::NoSuchPath),
            NoRoute::Method => {
                Self::new(StatusCode::METHOD_NOT_ALLOWED, code::METHOD_NOT_ALLOWED, Message::MethodNotAllowed)
            }
        }
    }
}

impl<Op: Operation> From<BearerError> for Failure<Op> {
    fn from(error: BearerError) -> Self {
        match error {
            BearerError::Expired => Self::bearer_refused(
                Op::REFUSALS,
                "expired",
                Message::TokenExpired,
                Challenge::InvalidToken(describe::EXPIRED),
            ),
            BearerError::Refused(reason) => Self::bearer_refused(
                Op::REFUSALS,
                reason,
                Message::TokenInvalid,
                Challenge::InvalidToken(describe::INVALID),
            ),
            BearerError::Proof(refusal) => {
                let description = if refusal.fresh_nonce().is_some() { describe::NONCE } else { describe::PROOF };
                Self {
                    dpop_nonce: refusal.fresh_nonce().map(str::to_owned),
                    ..Self::bearer_refused(
                        Op::REFUSALS,
                        refusal.label(),
                        Message::Proof(refusal.clone()),
                        Challenge::Proof(refusal.error_code(), description),
                    )
                }
            }
            BearerError::Limited(over) => over.into(),
            BearerError::Unavailable(cause) => Self::outage_because("revocations could not be read", cause),
        }
    }
}

/// A DPoP proof refused at the token endpoint (RFC 9449 §5): 400 with the token error
/// body, `code` `invalid_dpop_proof` (or `use_dpop_nonce`, with `DPoP-Nonce`),
/// `location` `DPoP`, and what was wrong.
impl From<ProofRefusal> for Failure<Authorize> {
    fn from(refusal: ProofRefusal) -> Self {
        Self {
            location: Some("DPoP".into()),
            dpop_nonce: refusal.fresh_nonce().map(str::to_owned),
            ..Self::new(StatusCode::BAD_REQUEST, refusal.error_code(), Message::Proof(refusal.clone()))
                .noted(Note::Refused { operation: Authorize::REFUSALS, reason: refusal.label() })
        }
    }
}

impl<Op: Operation> From<Unauthenticated> for Failure<Op> {
    fn from(refusal: Unauthenticated) -> Self {
        match refusal {
            Unauthenticated::NoToken => {
                Self::bearer_refused(Op::REFUSALS, "no bearer token", Message::TokenMissing, Challenge::Bearer)
            }
            Unauthenticated::MalformedHeader => Self::bearer_refused(
                Op::REFUSALS,
                "malformed authorization",
                Message::AuthorizationMalformed,
                Challenge::InvalidRequest(describe::MALFORMED),
            ),
            Unauthenticated::Bearer(error) => error.into(),
            Unauthenticated::BadRequest(bad) => bad.into(),
        }
    }
}

impl From<AuthorizeError> for Failure<Authorize> {
    fn from(error: AuthorizeError) -> Self {
        match error {
            AuthorizeError::Unauthorized(reason) => {
                Self::new(StatusCode::UNAUTHORIZED, code::UNAUTHORIZED, Message::Unauthorized)
                    .noted(Note::Refused { operation: Authorize::REFUSALS, reason: reason.label() })
            }
            AuthorizeError::RedirectUriNotRegistered => BadRequest::new("redirect_uri", Message::RedirectUri).into(),
            AuthorizeError::Proof(refusal) => refusal.into(),
            AuthorizeError::ProofRequired => Self {
                location: Some("DPoP".into()),
                ..Self::new(StatusCode::BAD_REQUEST, "invalid_dpop_proof", Message::ProofRequired)
                    .noted(Note::Refused { operation: Authorize::REFUSALS, reason: "dpop required" })
            },
            AuthorizeError::Unavailable(cause) => Self::outage_because("token issuance failed", cause),
            AuthorizeError::SigningFailed(cause) => Self::outage_because("token issuance failed", cause),
        }
    }
}

impl From<RetrieveWaitTimesError> for Failure<WaitTimes> {
    fn from(error: RetrieveWaitTimesError) -> Self {
        match error {
            RetrieveWaitTimesError::SessionMismatch => Self::bearer_refused(
                WaitTimes::REFUSALS,
                "sid is not the token's session",
                Message::OtherSession,
                Challenge::InvalidToken(describe::OTHER_SESSION),
            ),
            RetrieveWaitTimesError::AccessNotConfigured => {
                Self::new(StatusCode::FORBIDDEN, code::ACCESS_NOT_CONFIGURED, Message::AccessNotConfigured)
            }
            RetrieveWaitTimesError::DuplicateBranch { index, branch } => Self {
                location: Some(format!("branches[{index}].branchId")),
                ..Self::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    code::BUSINESS_VALIDATION_FAILED,
                    Message::DuplicateBranch(branch.to_string()),
                )
            },
            RetrieveWaitTimesError::NoneKnown => {
                Self::new(StatusCode::NOT_FOUND, code::RESOURCE_NOT_FOUND, Message::NoBranchKnown)
            }
            RetrieveWaitTimesError::Unavailable(cause) => Self::outage_because("wait times could not be read", cause),
        }
    }
}

impl From<ListAtmsError> for Failure<Atms> {
    fn from(error: ListAtmsError) -> Self {
        match error {
            ListAtmsError::PageOutOfRange(past) => BadRequest::new("page", Message::PageRange(past.last_page)).into(),
            ListAtmsError::Unavailable(cause) => Self::outage_because("the ATM set is unavailable", cause),
        }
    }
}

impl From<FeedError> for Failure<AtmChanges> {
    fn from(error: FeedError) -> Self {
        match error {
            FeedError::Expired => Self {
                location: Some("since".into()),
                ..Self::new(StatusCode::GONE, code::CURSOR_EXPIRED, Message::CursorExpired)
            },
            FeedError::Unavailable(cause) => Self::outage_because("the change feed is unavailable", cause),
        }
    }
}

impl From<RevocationError> for Failure<Revoke> {
    fn from(error: RevocationError) -> Self {
        match error {
            RevocationError::UnknownClient => Self {
                location: Some("client_id".into()),
                ..Self::new(StatusCode::BAD_REQUEST, code::INVALID_CLIENT, Message::ClientNotActive)
                    .noted(Note::Refused { operation: Revoke::REFUSALS, reason: "client not active" })
            },
            RevocationError::OtherClient => Self {
                location: Some("token".into()),
                ..Self::new(StatusCode::BAD_REQUEST, code::UNAUTHORIZED_CLIENT, Message::OtherClientsToken)
                    .noted(Note::Refused { operation: Revoke::REFUSALS, reason: "another client's token" })
            },
            RevocationError::Unavailable(cause) => Self::outage_because("the token could not be revoked", cause),
        }
    }
}

/// A grant type the token endpoint does not take (RFC 6749 §5.2 `unsupported_grant_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnsupportedGrantType;

impl From<UnsupportedGrantType> for Failure<SystemToken> {
    fn from(_: UnsupportedGrantType) -> Self {
        Self {
            location: Some("grant_type".into()),
            ..Self::new(StatusCode::BAD_REQUEST, code::UNSUPPORTED_GRANT_TYPE, Message::UnsupportedGrantType)
        }
    }
}

impl From<SystemTokenError> for Failure<SystemToken> {
    fn from(error: SystemTokenError) -> Self {
        match error {
            SystemTokenError::InvalidRequest(why) => {
                Self::new(StatusCode::BAD_REQUEST, code::INVALID_REQUEST, Message::SystemGrant(why.to_owned()))
            }
            SystemTokenError::InvalidClient(why) => Self {
                challenge: Some(Challenge::InvalidClient),
                ..Self::new(StatusCode::UNAUTHORIZED, code::INVALID_CLIENT, Message::SystemGrant(why))
                    .noted(Note::Refused { operation: SystemToken::REFUSALS, reason: "assertion refused" })
            },
            SystemTokenError::InvalidScope => Self {
                location: Some("scope".into()),
                ..Self::new(StatusCode::BAD_REQUEST, code::INVALID_SCOPE, Message::SystemScope)
            },
            SystemTokenError::Unavailable(cause) => Self::outage_because("system token issuance failed", cause),
            SystemTokenError::SigningFailed(cause) => Self::outage_because("system token issuance failed", cause),
        }
    }
}

impl From<SystemBearerError> for Failure<SystemPosts> {
    fn from(error: SystemBearerError) -> Self {
        match error {
            SystemBearerError::InvalidToken(TokenRejected::Expired) => Self::bearer_refused(
                SystemPosts::REFUSALS,
                "expired",
                Message::TokenExpired,
                Challenge::InvalidToken(describe::EXPIRED),
            ),
            SystemBearerError::InvalidToken(TokenRejected::Invalid(reason)) => Self::bearer_refused(
                SystemPosts::REFUSALS,
                reason,
                Message::TokenInvalid,
                Challenge::InvalidToken(describe::INVALID),
            ),
            SystemBearerError::InsufficientScope(scope) => Self {
                challenge: Some(Challenge::InsufficientScope(scope.as_str())),
                ..Self::new(StatusCode::FORBIDDEN, code::INSUFFICIENT_SCOPE, Message::SystemScope)
                    .noted(Note::Refused { operation: SystemPosts::REFUSALS, reason: "insufficient scope" })
            },
            SystemBearerError::Unavailable(cause) => Self::outage_because("the system could not be checked", cause),
        }
    }
}

impl From<PostEventsError> for Failure<SystemPosts> {
    fn from(error: PostEventsError) -> Self {
        match error {
            PostEventsError::Unavailable(cause) => Self::outage_because("events could not be stored", cause),
        }
    }
}

/// What an error needs from its request: language and correlation id.
#[derive(Debug, Clone, Default)]
pub struct ErrorContext {
    /// The language of `details`.
    pub language: Language,
    /// The request's `uuid` header, if it was a valid UUID.
    pub uuid: Option<String>,
    /// Whether the request sent its access token with the `DPoP` scheme: its challenge
    /// is then in that scheme.
    pub dpop: bool,
}

impl ErrorContext {
    /// The language and correlation id errors of `request` are written with.
    pub fn of(request: &HttpRequest) -> Self {
        Self {
            language: Language::of(request),
            uuid: crate::correlation::valid_uuid(request.headers()).map(str::to_owned),
            dpop: crate::headers::sent_with_dpop(request.headers()),
        }
    }
}

/// A failure ready to be written: shape and context attached. Boxed, so the `Result`s
/// of handlers stay small on the success path.
#[derive(Debug)]
pub struct ApiError(Box<ErrorParts>);

#[derive(Debug)]
struct ErrorParts {
    status: StatusCode,
    code: &'static str,
    message: Message,
    location: Option<String>,
    challenge: Option<Challenge>,
    retry_after: Option<u64>,
    dpop_nonce: Option<String>,
    note: Note,
    shape: Shape,
    context: ErrorContext,
}

impl ApiError {
    /// `failure` of operation `Op`, to be written for `request` (its language and `uuid`).
    pub fn of<Op: Operation>(failure: impl Into<Failure<Op>>, request: &HttpRequest) -> Self {
        Self::with_context(failure.into(), ErrorContext::of(request))
    }

    /// `failure` written with `context`.
    pub fn with_context<Op: Operation>(failure: Failure<Op>, context: ErrorContext) -> Self {
        let Failure { status, code, message, location, challenge, retry_after, dpop_nonce, note, .. } = failure;
        Self(Box::new(ErrorParts {
            status,
            code,
            message,
            location,
            challenge,
            retry_after,
            dpop_nonce,
            note,
            shape: Op::SHAPE,
            context,
        }))
    }

    /// What the log and the metrics should know of it.
    pub fn note(&self) -> &Note {
        &self.0.note
    }

    /// Its location, for the log.
    pub fn location(&self) -> Option<&str> {
        self.0.location.as_deref()
    }

    /// The nonce a proof must carry, when the failure asks for one (`use_dpop_nonce`):
    /// written as `DPoP-Nonce` by [`crate::dpop::Nonces`], with every other nonce.
    pub fn dpop_nonce(&self) -> Option<&str> {
        self.0.dpop_nonce.as_deref()
    }
}

/// The answer of a handler of operation `Op`: what its steps answered, or their failure
/// written with the request's context (language, `uuid`, scheme), read only when there
/// is a failure to write. The one place a handler's failures meet their request: inside
/// the steps (an `async` block awaited in the call, `answer(&request, async { … }.await)`),
/// every error becomes the operation's [`Failure`] with `?` and its `From`.
///
/// It takes the steps' result, not their future: a future given to an `async fn` is kept
/// twice in the caller's state (once as the argument, once awaited), which made the
/// wait-time handler's future 1,576 bytes instead of 736, past glibc's per-thread cache,
/// and cost each request about 1,300 instructions in the allocator (callgrind).
///
/// # Errors
/// The steps' failure, ready to be written.
pub fn answer<Op: Operation>(
    request: &HttpRequest,
    steps: Result<HttpResponse, Failure<Op>>,
) -> Result<HttpResponse, ApiError> {
    steps.map_err(|failure| ApiError::with_context(failure, ErrorContext::of(request)))
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0.status.as_u16(), self.0.code)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.0.status
    }

    fn error_response(&self) -> HttpResponse {
        let parts = &*self.0;
        let location = parts.location.as_deref();
        let language = if parts.shape == Shape::OAuth { Language::En } else { parts.context.language };
        let details = parts.message.render(location, language);
        let timestamp = timestamp();
        let body = match parts.shape {
            Shape::ErrorResponse => serde_json::to_vec(&ErrorResponseBody {
                kind: if parts.status.is_server_error() { "fatal" } else { "error" },
                code: parts.code,
                details: &details,
                location,
                uuid: parts.context.uuid.as_deref(),
                timestamp: &timestamp,
            }),
            Shape::Token => serde_json::to_vec(&TokenErrorBody {
                code: parts.code,
                details: &details,
                location,
                timestamp: &timestamp,
            }),
            Shape::Obie => {
                // OBIE's title; the description says what was wrong
                // (docs/adr/0004-atm-operation-queries-pages-and-caching.md).
                let title = obie_title(parts.status.as_u16(), parts.context.language);
                serde_json::to_vec(&ObieErrorBody { status: parts.status.as_str(), title, description: &details })
            }
            Shape::OAuth => serde_json::to_vec(&OAuthErrorBody {
                error: oauth_error(parts.code),
                error_description: &oauth_description(&details),
            }),
        }
        .unwrap_or_default();
        let mut response = HttpResponse::build(parts.status);
        response
            .content_type(mime_json())
            .insert_header((header::CONTENT_LANGUAGE, language.header_value()))
            .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")));
        if let Some(challenge) = parts.challenge {
            response.insert_header((header::WWW_AUTHENTICATE, challenge.header_value(parts.context.dpop)));
        }
        if let Some(seconds) = parts.retry_after {
            response.insert_header((header::RETRY_AFTER, seconds));
        }
        response.body(body)
    }
}

/// `application/json`.
pub fn mime_json() -> HeaderValue {
    HeaderValue::from_static("application/json")
}
