//! Everything the service says to people, in English and Spanish, in one table: error
//! texts of the API (rendered per `Accept-Language`), OBIE's texts for the ATM
//! operation, and what a malformed value should look like (also used, in English, by
//! the operators' commands). Wire codes never change with the language.

use std::borrow::Cow;

use domain::dpop::ProofRefusal;
use domain::input::Expected;

/// The languages texts are written in (docs/contract.md: Spanish and English).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Language {
    /// English, the default.
    #[default]
    En,
    /// Spanish.
    Es,
}

impl Language {
    /// The language's tag, as `Content-Language` gives it.
    pub fn tag(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Es => "es",
        }
    }
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
    /// A header that takes one value was sent more than once.
    RepeatedHeader,
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
    /// No access token was sent.
    TokenMissing,
    /// The `Authorization` header is not `Bearer <token>`.
    AuthorizationMalformed,
    /// The access token expired.
    TokenExpired,
    /// The access token (or the client id sent with it) is not valid.
    TokenInvalid,
    /// The access token was issued for another session than `sid` names.
    OtherSession,
    /// A required header is absent.
    MissingHeader,
    /// A page number outside 1 to the last page (the last page's number).
    PageRange(u32),
    /// A number outside a range: its bounds as written.
    Between(&'static str, &'static str),
    /// A number that must be above 0 and at most this.
    AboveZeroUpTo(&'static str),
    /// Not a decimal number.
    Decimal,
    /// A parameter sent without the one it goes with.
    SentWith(&'static str),
    /// A parameter that needs a point (`latitude` and `longitude`).
    NeedsPoint,
    /// Not one of a code list's names; the list's name and an example.
    NotACode(&'static str, &'static str),
    /// Unsupported channel combination.
    AccessNotConfigured,
    /// `Content-Type` is not JSON.
    ContentType,
    /// `Content-Type` is not a form (the revocation endpoint).
    FormContentType,
    /// `client_id` names no active client.
    ClientNotActive,
    /// The token was issued to another client.
    OtherClientsToken,
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
    /// `atmId` is sent more often than allowed.
    TooManyAtmIds(usize),
    /// A page size outside 1 to this.
    LimitRange(usize),
    /// A feed cursor older than the changes kept, or of another store.
    CursorExpired,
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
    /// A DPoP proof refused, and why.
    Proof(ProofRefusal),
    /// The client requires DPoP and sent no proof.
    ProofRequired,
    /// A bank system's token request refused, and why (the token endpoint answers in
    /// English, RFC 6749 §5.2).
    SystemGrant(String),
    /// `grant_type` is not `client_credentials`.
    UnsupportedGrantType,
    /// The scope asked for is not the system's.
    SystemScope,
}

/// Why a DPoP proof was refused, in Spanish (the English is the refusal's own text).
fn proof_refusal_es(refusal: &ProofRefusal) -> String {
    match refusal {
        ProofRefusal::Malformed(reason) => format!("La prueba DPoP no es un JWT bien formado: {reason}"),
        ProofRefusal::Count => "Debe enviarse exactamente una cabecera DPoP".into(),
        ProofRefusal::Type => "El typ de la prueba DPoP debe ser dpop+jwt".into(),
        ProofRefusal::Algorithm => "El alg de la prueba DPoP no es ES256, EdDSA ni Ed25519".into(),
        ProofRefusal::Key => "El jwk de la prueba DPoP no es una clave pública P-256 o Ed25519 de su alg".into(),
        ProofRefusal::PrivateKey => "El jwk de la prueba DPoP contiene una clave privada".into(),
        ProofRefusal::Signature => "La firma de la prueba DPoP no se verifica con su jwk".into(),
        ProofRefusal::Missing(claim) => format!("La prueba DPoP no tiene el claim {claim}"),
        ProofRefusal::Method => "El htm de la prueba DPoP no es el método de esta solicitud".into(),
        ProofRefusal::Uri => "El htu de la prueba DPoP no es la URL de este recurso".into(),
        ProofRefusal::TooOld => "La prueba DPoP es demasiado antigua (iat)".into(),
        ProofRefusal::TooNew => "La prueba DPoP tiene fecha futura (iat)".into(),
        ProofRefusal::Replayed => "La prueba DPoP ya se usó (jti)".into(),
        ProofRefusal::TokenHash => "El ath de la prueba DPoP no es el hash de este token de acceso".into(),
        ProofRefusal::OtherKey => "La clave de la prueba DPoP no es aquella a la que está ligado el token".into(),
        ProofRefusal::UseNonce { .. } => {
            "La prueba DPoP debe llevar un nonce emitido recientemente por el servidor".into()
        }
    }
}

/// What a malformed value was expected to look like, in `language`.
pub fn expected(expected: Expected, language: Language) -> &'static str {
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
        (Language::En, Expected::Origin) => "a web origin such as https://app.example.mx (no path, no default port)",
        (Language::Es, Expected::Origin) => {
            "un origen web como https://app.example.mx (sin ruta ni puerto por defecto)"
        }
        (Language::En, Expected::SessionId) => "the session id returned by /v1/authorize",
        (Language::Es, Expected::SessionId) => "el identificador de sesión devuelto por /v1/authorize",
        (Language::En, Expected::Scope) => "the scope 'visitor'",
        (Language::Es, Expected::Scope) => "el alcance 'visitor'",
        (Language::En, Expected::Uuid) => "a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6",
        (Language::Es, Expected::Uuid) => "un UUID como 3fa85f64-5717-4562-b3fc-2c963f66afa6",
        (Language::En, Expected::CodeChallenge) => "43 base64url characters (RFC 7636 S256)",
        (Language::Es, Expected::CodeChallenge) => "43 caracteres base64url (RFC 7636 S256)",
        (Language::En, Expected::DpopPolicy) => "optional or required",
        (Language::Es, Expected::DpopPolicy) => "optional o required",
        (Language::En, Expected::SystemId) => "1 to 64 letters, digits, '.', '-' or '_'",
        (Language::Es, Expected::SystemId) => "de 1 a 64 letras, dígitos, '.', '-' o '_' (un sistema)",
        (Language::En, Expected::SystemScope) => "space-separated scopes, each 'queue:write' or 'atm:write'",
        (Language::Es, Expected::SystemScope) => {
            "alcances separados por espacios, cada uno 'queue:write' o 'atm:write'"
        }
        (Language::En, Expected::AtmId) => "an ATM's Identification: 1 to 35 characters, none hidden",
        (Language::Es, Expected::AtmId) => "la Identification de un cajero: de 1 a 35 caracteres, ninguno oculto",
        (Language::En, Expected::FeedCursor) => "a next the change feed gave",
        (Language::Es, Expected::FeedCursor) => "un next que dio el feed de cambios",
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
            Self::RepeatedHeader if es => format!("La cabecera {at} se envió más de una vez."),
            Self::RepeatedHeader => format!("The header {at} was sent more than once."),
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
            Self::Proof(refusal) if es => format!("{}.", proof_refusal_es(refusal)),
            Self::Proof(refusal) => format!("{refusal}."),
            Self::ProofRequired if es => {
                "Este cliente debe enviar una prueba DPoP (RFC 9449) en la cabecera DPoP.".into()
            }
            Self::ProofRequired => "This client must send a DPoP proof (RFC 9449) in the DPoP header.".into(),
            Self::SystemGrant(why) => format!("{why}."),
            Self::UnsupportedGrantType if es => "grant_type debe ser client_credentials.".into(),
            Self::UnsupportedGrantType => "grant_type must be client_credentials.".into(),
            Self::SystemScope if es => "El alcance pedido no es uno de los de este sistema.".into(),
            Self::SystemScope => "The scope asked for is not one of this system's.".into(),
            Self::TokenMissing if es => "Falta el token de acceso: envíe Authorization: Bearer <token>.".into(),
            Self::TokenMissing => "The access token is missing: send Authorization: Bearer <token>.".into(),
            Self::AuthorizationMalformed if es => {
                "La cabecera Authorization debe ser Bearer, un espacio y el token.".into()
            }
            Self::AuthorizationMalformed => "The Authorization header must be Bearer, one space and the token.".into(),
            Self::TokenExpired if es => "El token de acceso ha expirado; solicite uno nuevo.".into(),
            Self::TokenExpired => "The access token expired; ask for a new one.".into(),
            Self::TokenInvalid if es => "El token de acceso no es válido.".into(),
            Self::TokenInvalid => "The access token is not valid.".into(),
            Self::OtherSession if es => "El token de acceso no se emitió para la sesión que indica sid.".into(),
            Self::OtherSession => "The access token was not issued for the session sid names.".into(),
            Self::MissingHeader if es => format!("Falta la cabecera {at}."),
            Self::MissingHeader => format!("The {at} header is missing."),
            Self::PageRange(last) if es => format!("{at} debe ser un número entero de 1 a {last}."),
            Self::PageRange(last) => format!("{at} must be a whole number from 1 to {last}."),
            Self::Between(min, max) if es => format!("{at} debe estar entre {min} y {max}."),
            Self::Between(min, max) => format!("{at} must be between {min} and {max}."),
            Self::AboveZeroUpTo(max) if es => format!("{at} debe ser mayor que 0 y como máximo {max}."),
            Self::AboveZeroUpTo(max) => format!("{at} must be more than 0 and at most {max}."),
            Self::Decimal if es => format!("{at} debe ser un número decimal, como 19.4326."),
            Self::Decimal => format!("{at} must be a decimal number, such as 19.4326."),
            Self::SentWith(other) if es => format!("{at} debe enviarse junto con {other}."),
            Self::SentWith(other) => format!("{at} must be sent with {other}."),
            Self::NeedsPoint if es => format!("{at} requiere latitude y longitude."),
            Self::NeedsPoint => format!("{at} needs latitude and longitude."),
            Self::NotACode(list, example) if es => {
                format!("{at} debe ser un código de la lista {list} de OBIE, como {example}.")
            }
            Self::NotACode(list, example) => format!("{at} must be a code of OBIE's {list} list, such as {example}."),
            Self::AccessNotConfigured if es => {
                "El canal, país o negocio de la solicitud no está habilitado para esta operación.".into()
            }
            Self::AccessNotConfigured => {
                "The channel, country or business in the request is not enabled for this operation.".into()
            }
            Self::ContentType if es => "Content-Type debe ser application/json.".into(),
            Self::ContentType => "Content-Type must be application/json.".into(),
            Self::FormContentType if es => "Content-Type debe ser application/x-www-form-urlencoded.".into(),
            Self::FormContentType => "Content-Type must be application/x-www-form-urlencoded.".into(),
            Self::ClientNotActive if es => "client_id no corresponde a ningún cliente activo.".into(),
            Self::ClientNotActive => "client_id names no active client.".into(),
            Self::OtherClientsToken if es => "El token no se emitió a este cliente; no se revocó.".into(),
            Self::OtherClientsToken => "The token was not issued to this client; it was not revoked.".into(),
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
            Self::TooManyAtmIds(max) if es => format!("atmId admite como máximo {max} valores."),
            Self::TooManyAtmIds(max) => format!("atmId may be sent at most {max} times."),
            Self::LimitRange(max) if es => format!("{at} debe ser un número entero de 1 a {max}."),
            Self::LimitRange(max) => format!("{at} must be a whole number from 1 to {max}."),
            Self::CursorExpired if es => {
                "El cursor es anterior a los cambios guardados: empiece de nuevo sin since.".into()
            }
            Self::CursorExpired => "The cursor is older than the changes kept: start again without since.".into(),
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

/// OBIE's title for `status` (reference swagger, error objects), and its Spanish;
/// statuses OBIE does not define have titles in the same style. The spec's 500 title
/// "Too many requests" is a copy error (docs/contract.md).
pub fn obie_title(status: u16, language: Language) -> &'static str {
    let es = language == Language::Es;
    match status {
        400 if es => "Solicitud incorrecta",
        400 => "Bad request",
        401 if es => "No autorizado",
        401 => "Unauthorized",
        404 if es => "No encontrado",
        404 => "Not found",
        405 if es => "Método no permitido",
        405 => "Method not allowed",
        408 if es => "Tiempo de espera agotado",
        408 => "Client timeout",
        429 if es => "Demasiadas solicitudes",
        429 => "Too many requests",
        503 if es => "Servicio no disponible temporalmente",
        503 => "Service temporarily unavailable",
        _ if es => "Error interno del servidor",
        _ => "Internal server error",
    }
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
            Message::TokenMissing,
            Message::AuthorizationMalformed,
            Message::TokenExpired,
            Message::TokenInvalid,
            Message::OtherSession,
            Message::MissingHeader,
            Message::PageRange(48),
            Message::Between("-90", "90"),
            Message::Decimal,
            Message::AboveZeroUpTo("20037.5"),
            Message::SentWith("latitude"),
            Message::NeedsPoint,
            Message::NotACode("ATMServices", "CashWithdrawal"),
            Message::LimitRange(1_000),
            Message::CursorExpired,
        ];
        for message in messages {
            let en = message.render(Some("branches[0].branchId"), Language::En);
            let es = message.render(Some("branches[0].branchId"), Language::Es);
            assert_ne!(en, es, "{message:?}");
        }
    }

    #[test]
    fn every_expected_shape_has_english_and_spanish_text() {
        let shapes = [
            Expected::FiveDigits,
            Expected::Minutes,
            Expected::CountryCode,
            Expected::BusinessCode,
            Expected::ChannelId,
            Expected::ClientId,
            Expected::RedirectUri,
            Expected::Origin,
            Expected::SessionId,
            Expected::Scope,
            Expected::Uuid,
            Expected::CodeChallenge,
            Expected::DpopPolicy,
            Expected::SystemId,
            Expected::SystemScope,
            Expected::AtmId,
            Expected::FeedCursor,
        ];
        for shape in shapes {
            assert_ne!(expected(shape, Language::En), expected(shape, Language::Es), "{shape:?}");
        }
    }

    #[test]
    fn obie_titles_are_the_reference_files_in_english() {
        assert_eq!(obie_title(429, Language::En), "Too many requests");
        assert_eq!(obie_title(500, Language::En), "Internal server error");
        assert_ne!(obie_title(400, Language::Es), obie_title(400, Language::En));
    }

    #[test]
    fn a_missing_value_names_its_location() {
        assert!(Message::Missing.render(Some("countryCode"), Language::En).contains("countryCode"));
    }
}
