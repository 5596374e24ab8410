//! Every error the HTTP layer answers, in one place: how each domain error becomes a
//! wire failure (status, `code`, text, location, headers), and how a failure is written
//! in the body shape of its operation family (the spec gives the wait-time, token and
//! ATM operations different bodies). Handlers convert errors with `?`/`into()` and never
//! choose a status. The texts are in [`crate::texts`]; the bodies in [`bodies`].

pub mod bodies;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use domain::services::atms::ListAtmsError;
use domain::services::authorize::AuthorizeError;
use domain::services::wait_times::RetrieveWaitTimesError;

pub use crate::texts::Message;
use crate::texts::{Language, obie_texts};
use bodies::{ErrorResponseBody, ObieErrorBody, TokenErrorBody, timestamp};

use super::request::Unauthenticated;

/// The wire `code` values (spec: Errors; DECISIONS.md for the token endpoint).
pub mod code {
    /// 400: missing or invalid parameters.
    pub const INVALID_REQUEST: &str = "invalidRequest";
    /// 401: credentials missing or invalid.
    pub const UNAUTHORIZED: &str = "unAuthorized";
    /// 403: channel, country or business not supported.
    pub const ACCESS_NOT_CONFIGURED: &str = "accessNotConfigured";
    /// 404: resource not found.
    pub const RESOURCE_NOT_FOUND: &str = "resourceNotFound";
    /// 405: method not allowed on an existing path (not in the spec; DECISIONS.md).
    pub const METHOD_NOT_ALLOWED: &str = "methodNotAllowed";
    /// 422: business validation failed.
    pub const BUSINESS_VALIDATION_FAILED: &str = "businessValidationFailed";
    /// 429: too many requests (the ATM body has no code; the others carry it).
    pub const TOO_MANY_REQUESTS: &str = "tooManyRequests";
    /// 500: internal error or server unavailable.
    pub const SERVER_UNAVAILABLE: &str = "serverUnavailable";
}

/// How long a client of the ATM operation is asked to wait when the ATM set cannot be
/// served (DECISIONS.md: 503 with `Retry-After`).
const ATM_OUTAGE_RETRY_AFTER_SECONDS: u64 = 5;

/// A failure before it is given a body shape: status, wire code, message, location, and
/// the headers it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// HTTP status.
    pub status: StatusCode,
    /// Wire `code`.
    pub code: &'static str,
    /// What to tell the caller.
    pub message: Message,
    /// The header, parameter or body field at fault.
    pub location: Option<String>,
    /// Adds `WWW-Authenticate: Bearer` (RFC 6750 §3).
    pub bearer_challenge: bool,
    /// Adds `Retry-After` (RFC 9110 §10.2.3), in seconds.
    pub retry_after: Option<u64>,
}

impl Failure {
    fn new(status: StatusCode, code: &'static str, message: Message) -> Self {
        Self { status, code, message, location: None, bearer_challenge: false, retry_after: None }
    }

    /// 400 `invalidRequest` at `location`.
    pub fn invalid(location: impl Into<String>, message: Message) -> Self {
        Self { location: Some(location.into()), ..Self::new(StatusCode::BAD_REQUEST, code::INVALID_REQUEST, message) }
    }

    /// 401 `unAuthorized`: the client's own credentials (the token endpoint).
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, code::UNAUTHORIZED, Message::Unauthorized)
    }

    /// 401 `unAuthorized` with a `Bearer` challenge: the bearer token, its `client_id`
    /// or `sid` refused.
    pub fn bearer_refused() -> Self {
        Self {
            bearer_challenge: true,
            ..Self::new(StatusCode::UNAUTHORIZED, code::UNAUTHORIZED, Message::BearerUnauthorized)
        }
    }

    /// 429 over a request limit, to retry after `seconds`.
    pub fn too_many_requests(seconds: u64) -> Self {
        Self {
            retry_after: Some(seconds),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, code::TOO_MANY_REQUESTS, Message::TooManyRequests)
        }
    }

    /// 404 `resourceNotFound`: no such path.
    pub fn no_such_path() -> Self {
        Self::new(StatusCode::NOT_FOUND, code::RESOURCE_NOT_FOUND, Message::NoSuchPath)
    }

    /// 405 `methodNotAllowed`.
    pub fn method_not_allowed() -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, code::METHOD_NOT_ALLOWED, Message::MethodNotAllowed)
    }

    /// The service cannot answer: 500 `serverUnavailable` (503 with `Retry-After` for
    /// the ATM operation). Log the cause before calling this.
    pub fn unavailable() -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, code::SERVER_UNAVAILABLE, Message::ServerUnavailable)
    }
}

impl From<AuthorizeError> for Failure {
    fn from(error: AuthorizeError) -> Self {
        match error {
            AuthorizeError::Unauthorized(reason) => {
                tracing::info!(?reason, "client refused");
                if crate::metrics::on() {
                    crate::metrics::refused("authorize", reason.label());
                }
                Self::unauthorized()
            }
            AuthorizeError::RedirectUriNotRegistered => Self::invalid("redirect_uri", Message::RedirectUri),
            AuthorizeError::Unavailable(cause) => {
                tracing::error!(error = %cause, "token issuance failed");
                Self::unavailable()
            }
            AuthorizeError::SigningFailed(cause) => {
                tracing::error!(error = %cause, "token issuance failed");
                Self::unavailable()
            }
        }
    }
}

impl From<RetrieveWaitTimesError> for Failure {
    fn from(error: RetrieveWaitTimesError) -> Self {
        match error {
            RetrieveWaitTimesError::SessionMismatch => {
                tracing::info!("sid is not the token's session");
                Self::bearer_refused()
            }
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
            RetrieveWaitTimesError::Unavailable(cause) => {
                tracing::error!(error = %cause, "wait times could not be read");
                Self::unavailable()
            }
        }
    }
}

impl From<ListAtmsError> for Failure {
    fn from(error: ListAtmsError) -> Self {
        match error {
            ListAtmsError::PageOutOfRange(past) => {
                tracing::info!(%past, "page out of range");
                Self::invalid("page", Message::Invalid)
            }
            ListAtmsError::Unavailable(cause) => {
                tracing::error!(error = %cause, "the ATM set is unavailable");
                Self::unavailable()
            }
        }
    }
}

impl From<Unauthenticated> for Failure {
    fn from(refusal: Unauthenticated) -> Self {
        match refusal {
            Unauthenticated::Refused => Self::bearer_refused(),
            Unauthenticated::Invalid(failure) => failure,
            Unauthenticated::Unavailable(cause) => {
                tracing::error!(error = %cause, "revocations could not be read");
                Self::unavailable()
            }
        }
    }
}

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
}

/// What an error needs from its request: language and correlation id.
#[derive(Debug, Clone, Default)]
pub struct ErrorContext {
    /// The language of `details`.
    pub language: Language,
    /// The request's `uuid` header, if it was a valid UUID.
    pub uuid: Option<String>,
}

/// A failure ready to be written: shape and context attached. Boxed, so the `Result`s
/// of handlers stay small on the success path.
#[derive(Debug)]
pub struct ApiError(Box<ErrorParts>);

#[derive(Debug)]
struct ErrorParts {
    failure: Failure,
    shape: Shape,
    context: ErrorContext,
}

impl ApiError {
    /// `failure` written as `shape` for the request described by `context`. The ATM
    /// operation answers an outage with 503 and `Retry-After` (DECISIONS.md); the
    /// others with 500.
    pub fn new(failure: impl Into<Failure>, shape: Shape, context: &ErrorContext) -> Self {
        let mut failure = failure.into();
        if shape == Shape::Obie && failure.message == Message::ServerUnavailable {
            failure.status = StatusCode::SERVICE_UNAVAILABLE;
            failure.retry_after = Some(ATM_OUTAGE_RETRY_AFTER_SECONDS);
        }
        Self(Box::new(ErrorParts { failure, shape, context: context.clone() }))
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0.failure.status.as_u16(), self.0.failure.code)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.0.failure.status
    }

    fn error_response(&self) -> HttpResponse {
        let parts = &*self.0;
        let failure = &parts.failure;
        let location = failure.location.as_deref();
        let details = failure.message.render(location, parts.context.language);
        let timestamp = timestamp();
        let body = match parts.shape {
            Shape::ErrorResponse => serde_json::to_vec(&ErrorResponseBody {
                kind: if failure.status.is_server_error() { "fatal" } else { "error" },
                code: failure.code,
                details: &details,
                location,
                uuid: parts.context.uuid.as_deref(),
                timestamp: &timestamp,
            }),
            Shape::Token => serde_json::to_vec(&TokenErrorBody {
                code: failure.code,
                details: &details,
                location,
                timestamp: &timestamp,
            }),
            Shape::Obie => {
                let (title, description) = obie_texts(failure.status.as_u16(), parts.context.language);
                serde_json::to_vec(&ObieErrorBody { status: failure.status.as_str(), title, description })
            }
        }
        .unwrap_or_default();
        let mut response = HttpResponse::build(failure.status);
        response
            .content_type(mime_json())
            .insert_header((header::CONTENT_LANGUAGE, parts.context.language.header_value()))
            .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")));
        if failure.bearer_challenge {
            response.insert_header((header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")));
        }
        if let Some(seconds) = failure.retry_after {
            response.insert_header((header::RETRY_AFTER, seconds));
        }
        response.body(body)
    }
}

/// `application/json`.
pub fn mime_json() -> HeaderValue {
    HeaderValue::from_static("application/json")
}
