//! The OpenAPI 3.1 document, generated from the handlers' and wire types' annotations
//! (utoipa), so it cannot drift from the code. The ATM record schema is taken from the
//! UK Open Banking ATM 2.3 reference file itself (`docs/reference/`), which is what the
//! domain's ATM types implement field for field.

use std::sync::OnceLock;

use actix_web::HttpResponse;
use actix_web::http::header::{self, HeaderValue};
use serde_json::Value;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::errors::mime_json;

/// The OBIE ATM Locator 2.3 swagger, byte for byte (sha256 checked by the tests).
const OBIE_ATM_REFERENCE: &str = include_str!("../../../docs/reference/obie-atml.2.3.0.swagger.json");

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Branch and ATM Open Banking API",
        version = "1.0.0",
        description = "A bank's public open-banking API: pre-login visitor tokens, estimated branch wait times, \
                       and ATM information (UK Open Banking ATM 2.3 records). Get a token from /v1/authorize, then \
                       send it as `Authorization: Bearer <token>` with the `client_id` it was issued to. An app \
                       holding a key pair sends a DPoP proof (RFC 9449) with the token request and gets a token \
                       bound to that key (`token_type` `DPoP`), sent as `Authorization: DPoP <token>` with a \
                       fresh proof in the `DPoP` header on every call.",
        license(name = "Apache-2.0"),
    ),
    servers(
        (url = "/api", description = "This server"),
        (url = "https://{host}/api", description = "A deployment, over HTTPS",
            variables(("host" = (default = "api.example.mx", description = "The deployment's host name")))),
    ),
    paths(
        crate::authorize::authorize,
        crate::revoke::revoke,
        crate::system_token::token,
        crate::wait_times::retrieve,
        crate::queue_events::post,
        crate::atms::list,
        crate::atm_states::list,
        crate::atm_states::post,
        crate::atm_changes::list,
        crate::discovery::status,
        crate::discovery::outages,
        crate::meta::jwks,
        crate::meta::authorization_server,
        crate::meta::live,
        crate::meta::ready,
        crate::meta::reads,
    ),
    modifiers(&BearerScheme),
    tags(
        (name = "Token", description = "Pre-login tokens, the bank systems' tokens, and the keys that verify them"),
        (name = "Branches", description = "Estimated branch wait times, and the queue events they are estimated from"),
        (name = "ATMs", description = "ATM information, and the ATMs' states now"),
        (name = "Discovery", description = "The service's status and planned outages, public (CDR-shaped)"),
        (name = "Health", description = "For load balancers"),
    ),
)]
struct ApiDoc;

/// Declares the bearer scheme the protected operations name.
struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut bearer = Http::new(HttpAuthScheme::Bearer);
        bearer.bearer_format = Some("JWT".to_owned());
        bearer.description = Some(
            "The access_token from /v1/authorize (an Ed25519-signed JWT), with the `client_id` header.".to_owned(),
        );
        components.add_security_scheme("bearer", SecurityScheme::Http(bearer));
    }
}

/// The DPoP scheme (RFC 9449 §7.1), which utoipa's list of HTTP schemes does not hold.
fn dpop_scheme(document: &mut Value) -> Option<()> {
    let schemes = document.pointer_mut("/components/securitySchemes")?.as_object_mut()?;
    schemes.insert(
        "dpop".to_owned(),
        serde_json::json!({
            "type": "http",
            "scheme": "DPoP",
            "description": "A token bound to the app's key (its `token_type` is `DPoP`): sent as \
                `Authorization: DPoP <token>` with a proof in the `DPoP` header, made by that key for this \
                request (`htm`, `htu`, and `ath` the hash of the token), with the `client_id` header. A \
                refused proof is a 401 with `WWW-Authenticate: DPoP error=\"invalid_dpop_proof\"` (or \
                `use_dpop_nonce`, with a `DPoP-Nonce` to retry with)."
        }),
    );
    Some(())
}

/// The ATM item schema of the reference file, plus the near-me extension field.
fn obie_atm_schema() -> Option<Value> {
    let reference: Value = serde_json::from_str(OBIE_ATM_REFERENCE).ok()?;
    let mut atm = reference
        .pointer(
            "/paths/~1atms/get/responses/200/schema/properties/data/items/properties/Brand/items/properties/ATM/items",
        )?
        .clone();
    atm.get_mut("properties")?.as_object_mut()?.insert(
        "DistanceInMetres".to_owned(),
        serde_json::json!({
            "type": "integer",
            "minimum": 0,
            "description": "Extension (near-me searches only): metres from the search point, rounded."
        }),
    );
    Some(atm)
}

/// Query parameters that only make sense together, as one exploded form object
/// (OpenAPI 3.1 §4.8.12.4: `style: form, explode: true` puts each property in the query
/// as its own `name=value`, so the wire is unchanged): `required` inside the object says
/// which must come together, which separate parameters cannot say (issue 11, contract).
struct ParameterGroup {
    path: &'static str,
    method: &'static str,
    name: &'static str,
    members: &'static [&'static str],
    required: &'static [&'static str],
    description: &'static str,
}

const PARAMETER_GROUPS: [ParameterGroup; 2] = [
    ParameterGroup {
        path: "/v1/atms",
        method: "get",
        name: "near",
        members: &["latitude", "longitude", "radiusKm"],
        required: &["latitude", "longitude"],
        description: "Near-me search, sent as separate query parameters: `latitude` and `longitude` together \
                      (nearest ATMs first, each with `DistanceInMetres`), optionally `radiusKm`. Any of them \
                      without `latitude` and `longitude` is a 400.",
    },
    ParameterGroup {
        path: "/v1/authorize",
        method: "get",
        name: "pkce",
        members: &["code_challenge", "code_challenge_method"],
        required: &["code_challenge_method"],
        description: "PKCE (RFC 7636), sent as separate query parameters: `code_challenge` needs \
                      `code_challenge_method=S256` (a missing method would mean `plain`, which is refused); \
                      the method alone asks for nothing.",
    },
];

/// Replaces the group's separate parameters with one exploded object parameter.
fn group_parameters(document: &mut Value, group: &ParameterGroup) -> Option<()> {
    let pointer = format!("/paths/{}/{}/parameters", group.path.replace('/', "~1"), group.method);
    let parameters = document.pointer_mut(&pointer)?.as_array_mut()?;
    // All members there, or nothing changes (a unit test checks every group took).
    if !group.members.iter().all(|member| parameters.iter().any(|p| p["name"] == *member)) {
        return None;
    }
    let first = parameters.iter().position(|p| group.members.contains(&p["name"].as_str().unwrap_or_default()))?;
    let mut properties = serde_json::Map::new();
    for member in group.members {
        let at = parameters.iter().position(|p| p["name"] == *member)?;
        let parameter = parameters.remove(at);
        let mut schema = parameter["schema"].clone();
        // The generated schema allows null for an optional parameter; a property that is
        // sent has a value.
        if let Some(types) = schema.get("type").and_then(Value::as_array).cloned() {
            let kinds: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
            schema["type"] = if kinds.len() == 1 { kinds[0].clone() } else { Value::Array(kinds) };
        }
        if let Some(description) = parameter.get("description") {
            schema["description"] = description.clone();
        }
        properties.insert((*member).to_owned(), schema);
    }
    let grouped = serde_json::json!({
        "name": group.name,
        "in": "query",
        "required": false,
        "style": "form",
        "explode": true,
        "description": group.description,
        // No `additionalProperties: false`: a reader of an exploded object cannot tell
        // its properties from the operation's other query parameters.
        "schema": {
            "type": "object",
            "properties": properties,
            "required": group.required
        }
    });
    parameters.insert(first, grouped);
    Some(())
}

/// A run of one brand's ATMs in an ATM page's `data`: written by `atms::render` from
/// the stored records, so described here beside the reference file's record.
fn atm_brand_schema() -> Value {
    serde_json::json!({
        "properties": {
            "ATM": {
                "description": "Its ATMs on this page (UK Open Banking ATM 2.3 records).",
                "items": {"$ref": "#/components/schemas/ATM"},
                "minItems": 1,
                "type": "array"
            },
            "BrandName": {"description": "The brand.", "maxLength": 140, "minLength": 1, "type": "string"}
        },
        "required": ["BrandName", "ATM"],
        "type": "object"
    })
}

/// The whole document as JSON.
pub fn document() -> Value {
    let mut document = serde_json::to_value(ApiDoc::openapi()).unwrap_or(Value::Null);
    if let (Some(schemas), Some(atm)) =
        (document.pointer_mut("/components/schemas").and_then(Value::as_object_mut), obie_atm_schema())
    {
        schemas.insert("ATM".to_owned(), atm);
        schemas.insert("AtmBrand".to_owned(), atm_brand_schema());
    }
    for group in &PARAMETER_GROUPS {
        group_parameters(&mut document, group);
    }
    well_known_metadata(&mut document);
    dpop_scheme(&mut document);
    document
}

/// The metadata's other address, RFC 8414 §3.1's: on the host, outside `/api`, so with
/// servers of its own (OpenAPI 3.1 §4.8.9.1: a path's `servers` override the document's).
fn well_known_metadata(document: &mut Value) -> Option<()> {
    let paths = document.get_mut("paths")?.as_object_mut()?;
    let mut item = paths.get("/.well-known/oauth-authorization-server")?.clone();
    let operation = item.get_mut("get")?.as_object_mut()?;
    operation.insert("operationId".to_owned(), Value::from("authorizationServerMetadataAtTheHost"));
    item.as_object_mut()?.insert(
        "servers".to_owned(),
        serde_json::json!([
            {"url": "/", "description": "This server"},
            {"url": "https://{host}", "description": "A deployment, over HTTPS",
             "variables": {"host": {"default": "api.example.mx", "description": "The deployment's host name"}}}
        ]),
    );
    paths.insert("/.well-known/oauth-authorization-server/api".to_owned(), item);
    Some(())
}

/// The document as served and as checked in (`docs/openapi.json`): pretty, with a final
/// newline.
pub fn document_text() -> String {
    let mut text = serde_json::to_string_pretty(&document()).unwrap_or_default();
    text.push('\n');
    text
}

/// A redirect to the docs page for a person who typed an address: browsers follow it, and
/// a terminal shows the line of text.
fn docs_redirect(mut redirect: actix_web::HttpResponseBuilder) -> HttpResponse {
    redirect
        .insert_header((header::LOCATION, "/api/docs/"))
        .content_type("text/plain; charset=utf-8")
        .body("The interactive API docs are at /api/docs/, the OpenAPI document at /api/openapi.json.\n")
}

/// GET /api/docs: the docs page lives at /api/docs/ (its assets are relative to it).
pub async fn to_docs() -> HttpResponse {
    docs_redirect(HttpResponse::PermanentRedirect())
}

/// GET /: no part of the API (whose base is /api), so the host's root points at the
/// docs; temporarily, so a browser does not keep it should the root serve more one day.
pub async fn root() -> HttpResponse {
    docs_redirect(HttpResponse::TemporaryRedirect())
}

/// GET /api/openapi.json.
pub async fn serve() -> HttpResponse {
    static TEXT: OnceLock<String> = OnceLock::new();
    HttpResponse::Ok()
        .content_type(mime_json())
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300")))
        .body(TEXT.get_or_init(document_text).as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_lists_every_operation_with_its_statuses() {
        let document = document();
        assert_eq!(document["openapi"], "3.1.0");
        let operations = [
            ("/v1/authorize", "get", vec!["200", "400", "401", "429", "500"]),
            (
                "/v1/open-banking/channels/branch/waittime/retrieve",
                "post",
                vec!["200", "400", "401", "403", "404", "422", "429", "500"],
            ),
            ("/v1/atms", "get", vec!["200", "304", "400", "401", "408", "429", "500", "503"]),
            ("/.well-known/jwks.json", "get", vec!["200"]),
            ("/health/live", "get", vec!["200"]),
            ("/health/ready", "get", vec!["200", "503"]),
        ];
        for (path, method, statuses) in operations {
            let responses = &document["paths"][path][method]["responses"];
            for status in statuses {
                assert!(responses.get(status).is_some(), "{method} {path} documents {status}");
            }
        }
    }

    #[test]
    fn parameters_that_go_together_are_one_object_each() {
        let document = document();
        for group in &PARAMETER_GROUPS {
            let parameters = document["paths"][group.path][group.method]["parameters"].as_array().unwrap();
            let grouped = parameters.iter().find(|p| p["name"] == group.name).expect("the group took");
            assert_eq!((&grouped["style"], &grouped["explode"]), (&Value::from("form"), &Value::from(true)));
            for member in group.members {
                assert!(grouped["schema"]["properties"][*member].is_object(), "{member} in {}", group.name);
                assert!(!parameters.iter().any(|p| p["name"] == *member), "{member} no longer on its own");
            }
        }
    }

    #[test]
    fn the_atm_record_is_the_reference_schema_with_its_enums_and_limits() {
        let document = document();
        let atm = &document["components"]["schemas"]["ATM"];
        assert_eq!(atm["properties"]["Identification"]["maxLength"], 35);
        assert_eq!(atm["properties"]["ATMServices"]["items"]["enum"].as_array().unwrap().len(), 17);
        assert!(atm["properties"]["DistanceInMetres"].is_object());
        assert_eq!(
            document["components"]["schemas"]["AtmBrand"]["properties"]["ATM"]["items"]["$ref"],
            "#/components/schemas/ATM"
        );
    }

    #[test]
    fn the_bearer_scheme_and_an_https_server_are_declared() {
        let document = document();
        assert_eq!(document["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
        assert_eq!(document["components"]["securitySchemes"]["dpop"]["scheme"], "DPoP");
        for (path, method) in [("/v1/atms", "get"), ("/v1/open-banking/channels/branch/waittime/retrieve", "post")] {
            let security = &document["paths"][path][method]["security"];
            assert_eq!(security, &serde_json::json!([{"bearer": []}, {"dpop": []}]), "{path}");
        }
        assert!(
            document["servers"].as_array().unwrap().iter().any(|s| s["url"].as_str().unwrap().starts_with("https://"))
        );
        assert_eq!(document["servers"][0]["url"], "/api");
    }

    #[test]
    fn the_checked_in_copy_is_the_generated_document() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
        let generated = document_text();
        if std::env::var_os("UPDATE_OPENAPI").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let checked_in = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            checked_in == generated,
            "docs/openapi.json differs from the generated document; run `UPDATE_OPENAPI=1 cargo test -p api --lib openapi` and commit it"
        );
    }
}
