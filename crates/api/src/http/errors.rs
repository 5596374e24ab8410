//! Every error the HTTP layer answers, in one place: which status and wire `code` each
//! failure gets, its text in English and Spanish, and the body shape of each operation
//! family (the spec gives the wait-time and token operations different bodies).

use std::borrow::Cow;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use domain::input::Expected;
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

use super::language::Language;

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
    /// 429: too many requests (logged only: the ATM body has no code).
    pub const TOO_MANY_REQUESTS: &str = "tooManyRequests";
    /// 500: internal error or server unavailable.
    pub const SERVER_UNAVAILABLE: &str = "serverUnavailable";
}

/// What went wrong, in words the caller can act on; rendered per language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A required header or parameter is absent.
    Missing,
    /// A header or parameter does not have the expected shape.
    Malformed(Expected),
    /// A value is not acceptable.
    Invalid,
    /// Over the client's request rate.
    TooManyRequests,
    /// A header value is not visible ASCII.
    NotText,
    /// The same query parameter was sent twice (RFC 6749 §3.1).
    Repeated,
    /// `response_type` other than `token`.
    ResponseType,
    /// `code_challenge_method` other than `S256`.
    ChallengeMethod,
    /// `state` not visible ASCII, or too long.
    State,
    /// `redirect_uri` not registered for the client.
    RedirectUri,
    /// Credentials missing or invalid.
    Unauthorized,
    /// Bearer credentials missing or invalid.
    BearerUnauthorized,
    /// Unsupported channel combination.
    AccessNotConfigured,
    /// `Content-Type` is not JSON.
    ContentType,
    /// `Accept` does not allow JSON.
    Accept,
    /// The body is over the size limit.
    BodyTooLarge(usize),
    /// The body did not arrive in time.
    BodyTimeout,
    /// The body is not the JSON the operation takes; serde's reason.
    Body(String),
    /// An empty branch list.
    NoBranches,
    /// More branches than allowed.
    TooManyBranches(usize),
    /// A branch asked for twice.
    DuplicateBranch(String),
    /// None of the branches is known.
    NoBranchKnown,
    /// No such path.
    NoSuchPath,
    /// Path exists, method does not.
    MethodNotAllowed,
    /// Anything on our side.
    ServerUnavailable,
}

fn expected(expected: Expected, language: Language) -> &'static str {
    match (language, expected) {
        (Language::En, Expected::FiveDigits) => "exactly 5 digits",
        (Language::Es, Expected::FiveDigits) => "exactamente 5 dígitos",
        (Language::En, Expected::Minutes) => "a whole number of minutes from 0 to 1440",
        (Language::Es, Expected::Minutes) => "un número entero de minutos de 0 a 1440",
        (Language::En, Expected::CountryCode) => "an ISO 3166-1 alpha-2 country code (two upper-case letters)",
        (Language::Es, Expected::CountryCode) => "un código de país ISO 3166-1 alfa-2 (dos letras mayúsculas)",
        (Language::En, Expected::BusinessCode) => "1 to 16 letters or digits",
        (Language::Es, Expected::BusinessCode) => "de 1 a 16 letras o dígitos",
        (Language::En, Expected::ChannelId) => "1 to 32 letters, digits, '-' or '_'",
        (Language::Es, Expected::ChannelId) => "de 1 a 32 letras, dígitos, '-' o '_'",
        (Language::En, Expected::ClientId) => "1 to 64 letters, digits, '.', '-' or '_'",
        (Language::Es, Expected::ClientId) => "de 1 a 64 letras, dígitos, '.', '-' o '_'",
        (Language::En, Expected::RedirectUri) => "an absolute https URI",
        (Language::Es, Expected::RedirectUri) => "un URI https absoluto",
        (Language::En, Expected::SessionId) => "the session id returned by /v1/authorize",
        (Language::Es, Expected::SessionId) => "el identificador de sesión devuelto por /v1/authorize",
        (Language::En, Expected::Scope) => "the scope 'visitor'",
        (Language::Es, Expected::Scope) => "el alcance 'visitor'",
        (Language::En, Expected::Uuid) => "a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6",
        (Language::Es, Expected::Uuid) => "un UUID como 3fa85f64-5717-4562-b3fc-2c963f66afa6",
        (Language::En, Expected::CodeChallenge) => "43 base64url characters (RFC 7636 S256)",
        (Language::Es, Expected::CodeChallenge) => "43 caracteres base64url (RFC 7636 S256)",
    }
}

impl Message {
    /// The text for `location` (a header, parameter or body field) in `language`.
    pub fn render(&self, location: Option<&str>, language: Language) -> Cow<'static, str> {
        let at = location.unwrap_or("-");
        let es = language == Language::Es;
        let text = match self {
            Self::Missing if es => format!("Falta el valor obligatorio {at}."),
            Self::Missing => format!("The required value {at} is missing."),
            Self::Malformed(shape) if es => format!("{at} no es válido: se espera {}.", expected(*shape, language)),
            Self::Malformed(shape) => format!("{at} is not valid: expected {}.", expected(*shape, language)),
            Self::Invalid if es => format!("{at} no es válido."),
            Self::Invalid => format!("{at} is not valid."),
            Self::TooManyRequests if es => "Demasiadas solicitudes; reduzca el ritmo.".into(),
            Self::TooManyRequests => "Too many requests; slow down.".into(),
            Self::NotText if es => format!("La cabecera {at} debe ser texto ASCII visible."),
            Self::NotText => format!("The header {at} must be visible ASCII text."),
            Self::Repeated if es => format!("El parámetro {at} se envió más de una vez."),
            Self::Repeated => format!("The parameter {at} was sent more than once."),
            Self::ResponseType if es => "response_type debe ser 'token'.".into(),
            Self::ResponseType => "response_type must be 'token'.".into(),
            Self::ChallengeMethod if es => {
                "code_challenge_method debe ser 'S256' cuando se envía code_challenge.".into()
            }
            Self::ChallengeMethod => "code_challenge_method must be 'S256' when code_challenge is sent.".into(),
            Self::State if es => "state debe ser texto ASCII visible de hasta 1024 caracteres.".into(),
            Self::State => "state must be visible ASCII text of at most 1024 characters.".into(),
            Self::RedirectUri if es => "redirect_uri no está registrado para este cliente.".into(),
            Self::RedirectUri => "redirect_uri is not registered for this client.".into(),
            Self::Unauthorized if es => "Las credenciales del cliente faltan o no son válidas.".into(),
            Self::Unauthorized => "The client credentials are missing or invalid.".into(),
            Self::BearerUnauthorized if es => "El token de acceso falta, no es válido o ha expirado.".into(),
            Self::BearerUnauthorized => "The access token is missing, invalid or expired.".into(),
            Self::AccessNotConfigured if es => {
                "El canal, país o negocio de la solicitud no está habilitado para esta operación.".into()
            }
            Self::AccessNotConfigured => {
                "The channel, country or business in the request is not enabled for this operation.".into()
            }
            Self::ContentType if es => "Content-Type debe ser application/json.".into(),
            Self::ContentType => "Content-Type must be application/json.".into(),
            Self::Accept if es => "Accept debe admitir application/json.".into(),
            Self::Accept => "Accept must allow application/json.".into(),
            Self::BodyTooLarge(limit) if es => format!("El cuerpo supera el máximo de {limit} bytes."),
            Self::BodyTooLarge(limit) => format!("The body exceeds the limit of {limit} bytes."),
            Self::BodyTimeout if es => "El cuerpo no llegó a tiempo.".into(),
            Self::BodyTimeout => "The body did not arrive in time.".into(),
            Self::Body(reason) if es => format!("El cuerpo no es un JSON válido para esta operación: {reason}."),
            Self::Body(reason) => format!("The body is not valid JSON for this operation: {reason}."),
            Self::NoBranches if es => "branches debe contener al menos una sucursal.".into(),
            Self::NoBranches => "branches must hold at least one branch.".into(),
            Self::TooManyBranches(max) if es => format!("branches admite como máximo {max} sucursales."),
            Self::TooManyBranches(max) => format!("branches holds at most {max} branches."),
            Self::DuplicateBranch(id) if es => format!("La sucursal {id} aparece más de una vez."),
            Self::DuplicateBranch(id) => format!("The branch {id} appears more than once."),
            Self::NoBranchKnown if es => "Ninguna de las sucursales solicitadas es conocida.".into(),
            Self::NoBranchKnown => "None of the requested branches is known.".into(),
            Self::NoSuchPath if es => "No existe ningún recurso en esta ruta.".into(),
            Self::NoSuchPath => "There is no resource at this path.".into(),
            Self::MethodNotAllowed if es => "El método no está permitido en esta ruta.".into(),
            Self::MethodNotAllowed => "The method is not allowed on this path.".into(),
            Self::ServerUnavailable if es => "El servicio no está disponible; inténtelo más tarde.".into(),
            Self::ServerUnavailable => "The service is unavailable; try again later.".into(),
        };
        Cow::Owned(text)
    }
}

/// A failure before it is given a body shape: status, wire code, message, location.
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
}

impl Failure {
    /// 400 `invalidRequest` at `location`.
    pub fn invalid(location: impl Into<String>, message: Message) -> Self {
        Self { status: StatusCode::BAD_REQUEST, code: code::INVALID_REQUEST, message, location: Some(location.into()) }
    }

    /// 401 `unAuthorized`.
    pub fn unauthorized(message: Message) -> Self {
        Self { status: StatusCode::UNAUTHORIZED, code: code::UNAUTHORIZED, message, location: None }
    }

    /// 500 `serverUnavailable`; log the cause before calling this.
    pub fn unavailable() -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: code::SERVER_UNAVAILABLE,
            message: Message::ServerUnavailable,
            location: None,
        }
    }

    /// Any other status and code.
    pub fn other(status: StatusCode, code: &'static str, message: Message) -> Self {
        Self { status, code, message, location: None }
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

/// OBIE's title and description for `status` (reference swagger, error objects), and
/// their Spanish; statuses OBIE does not define use texts in the same style. The spec's
/// 500 title "Too many requests" is a copy error (DECISIONS.md).
fn obie_texts(status: StatusCode, language: Language) -> (&'static str, &'static str) {
    let es = language == Language::Es;
    match status.as_u16() {
        400 if es => ("Solicitud incorrecta", "Ha enviado una solicitud que no se pudo entender."),
        400 => ("Bad request", "You have sent a request which could not be understood."),
        401 if es => ("No autorizado", "El token de acceso falta, no es válido o ha expirado."),
        401 => ("Unauthorized", "The access token is missing, invalid or expired."),
        404 if es => ("No encontrado", "No existe ningún recurso en esta ruta."),
        404 => ("Not found", "There is no resource at this path."),
        405 if es => ("Método no permitido", "El método no está permitido en esta ruta."),
        405 => ("Method not allowed", "The method is not allowed on this path."),
        408 if es => {
            ("Tiempo de espera agotado", "Su cliente no envió la solicitud a tiempo y se agotó el tiempo de espera.")
        }
        408 => ("Client timeout", "Your client has failed to submit a request, and a timeout has occurred."),
        429 if es => {
            ("Demasiadas solicitudes", "Ha solicitado este recurso con demasiada frecuencia. Reduzca el ritmo.")
        }
        429 => ("Too many requests", "You have requested this resource too often. Slow down."),
        503 if es => ("Servicio no disponible temporalmente", "El servicio no está disponible temporalmente."),
        503 => ("Service temporarily unavailable", "The service is temporarily unavailable."),
        _ if es => {
            ("Error interno del servidor", "Se produjo un error en el servidor. No hay más información disponible.")
        }
        _ => ("Internal server error", "An error occurred on the server. No further information is available."),
    }
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
    bearer_challenge: bool,
    retry_after: Option<u64>,
}

impl ApiError {
    /// `failure` written as `shape` for the request described by `context`.
    pub fn new(failure: Failure, shape: Shape, context: &ErrorContext) -> Self {
        Self(Box::new(ErrorParts {
            failure,
            shape,
            context: context.clone(),
            bearer_challenge: false,
            retry_after: None,
        }))
    }

    /// Adds `Retry-After: seconds` (RFC 9110 §10.2.3) to a 429 or 503.
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.0.retry_after = Some(seconds);
        self
    }

    /// Adds `WWW-Authenticate: Bearer` (RFC 6750 §3) to a 401.
    pub fn with_bearer_challenge(mut self) -> Self {
        self.0.bearer_challenge = true;
        self
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0.failure.status.as_u16(), self.0.failure.code)
    }
}

/// ErrorResponse: the wait-time operation's error body (and that of unknown paths).
#[derive(Serialize, ToSchema)]
#[schema(as = ErrorResponse)]
pub(crate) struct ErrorResponseBody<'a> {
    /// `error` for 4xx, `fatal` for 5xx (spec: one of error, warn, invalid, fatal).
    #[serde(rename = "type")]
    #[schema(value_type = String, pattern = "^(error|warn|invalid|fatal)$", example = "error")]
    kind: &'static str,
    /// The error code: invalidRequest, unAuthorized, accessNotConfigured,
    /// resourceNotFound, methodNotAllowed, businessValidationFailed, serverUnavailable.
    #[schema(value_type = String, example = "invalidRequest")]
    code: &'static str,
    /// What went wrong, in English or Spanish per Accept-Language.
    #[schema(value_type = String)]
    details: &'a str,
    /// The header, parameter or body field at fault, such as `branches[3].branchId`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "branches[3].branchId")]
    location: Option<&'a str>,
    /// The request's `uuid` header, when it was a valid UUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = "uuid")]
    uuid: Option<&'a str>,
    /// When the error happened (RFC 3339, UTC).
    #[schema(value_type = String, format = DateTime)]
    timestamp: &'a str,
}

/// The ATM endpoint's error body (OBIE): the status and OBIE's fixed texts.
#[derive(Serialize, ToSchema)]
#[schema(as = AtmError)]
pub(crate) struct ObieErrorBody<'a> {
    /// The HTTP status code, as a string.
    #[schema(value_type = String, pattern = "^[0-9]{3}$", example = "400")]
    status: &'a str,
    /// OBIE's title for the status (Spanish with Accept-Language: es).
    #[schema(value_type = String, example = "Bad request")]
    title: &'static str,
    /// OBIE's description for the status (Spanish with Accept-Language: es).
    #[schema(value_type = String, example = "You have sent a request which could not be understood.")]
    description: &'static str,
}

/// The token endpoint's error body.
#[derive(Serialize, ToSchema)]
#[schema(as = TokenError)]
pub(crate) struct TokenErrorBody<'a> {
    /// invalidRequest (400), unAuthorized (401), methodNotAllowed (405) or
    /// serverUnavailable (500).
    #[schema(value_type = String, example = "invalidRequest")]
    code: &'static str,
    /// What went wrong, in English or Spanish per Accept-Language.
    #[schema(value_type = String)]
    details: &'a str,
    /// The parameter or header at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "countryCode")]
    location: Option<&'a str>,
    /// When the error happened (RFC 3339, UTC).
    #[schema(value_type = String, format = DateTime)]
    timestamp: &'a str,
}

/// Now, RFC 3339 in UTC, for error `timestamp` fields.
pub fn timestamp() -> String {
    OffsetDateTime::now_utc().format(&Rfc3339).unwrap_or_default()
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
                let (title, description) = obie_texts(failure.status, parts.context.language);
                serde_json::to_vec(&ObieErrorBody { status: failure.status.as_str(), title, description })
            }
        }
        .unwrap_or_default();
        let mut response = HttpResponse::build(failure.status);
        response
            .content_type(mime_json())
            .insert_header((header::CONTENT_LANGUAGE, parts.context.language.header_value()))
            .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")));
        if parts.bearer_challenge {
            response.insert_header((header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_has_distinct_english_and_spanish_text() {
        let messages = [
            Message::Missing,
            Message::Malformed(Expected::FiveDigits),
            Message::Unauthorized,
            Message::AccessNotConfigured,
            Message::DuplicateBranch("00001".into()),
            Message::NoBranchKnown,
            Message::ServerUnavailable,
        ];
        for message in messages {
            let en = message.render(Some("branches[0].branchId"), Language::En);
            let es = message.render(Some("branches[0].branchId"), Language::Es);
            assert_ne!(en, es, "{message:?}");
        }
    }

    #[test]
    fn obie_texts_are_the_reference_files_in_english() {
        assert_eq!(
            obie_texts(StatusCode::TOO_MANY_REQUESTS, Language::En),
            ("Too many requests", "You have requested this resource too often. Slow down.")
        );
        assert_eq!(obie_texts(StatusCode::INTERNAL_SERVER_ERROR, Language::En).0, "Internal server error");
        assert_ne!(
            obie_texts(StatusCode::BAD_REQUEST, Language::Es),
            obie_texts(StatusCode::BAD_REQUEST, Language::En)
        );
    }

    #[test]
    fn a_missing_value_names_its_location() {
        assert!(Message::Missing.render(Some("countryCode"), Language::En).contains("countryCode"));
    }
}
