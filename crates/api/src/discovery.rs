//! GET /api/v1/discovery/status and GET /api/v1/discovery/outages: the service's own
//! status and its planned outages, public (no credentials, any origin may read them)
//! and shaped like the Australian Consumer Data Right's discovery APIs (`data`, `links`,
//! `meta`; the same field names and status values), so a status page or an app can
//! tell its users before they call.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use domain::outage::PlannedOutage;
use domain::status::{ServiceCondition, ServiceStatus};
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

use crate::errors::{ApiError, Meta};
use crate::state::AppState;

/// How long a cache may keep either answer: two seconds, the contract's bound on how
/// late a change is served (a status is derived every refresh, one second by default).
pub const CACHE_CONTROL: &str = "public, max-age=2";

/// `ResponseCommonDiscoveryStatus`.
#[derive(Serialize, ToSchema)]
pub struct StatusResponse {
    /// The status.
    data: StatusData,
    /// A link to this document.
    links: SelfLink,
    /// Empty (CDR).
    meta: EmptyMeta,
}

/// The service's condition, derived from what it observes of itself and the outages
/// operators planned (never typed in).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct StatusData {
    /// `OK`; `PARTIAL_FAILURE` (part of the service fails: tokens cannot be issued while
    /// wait times and ATMs are answered from memory, the checks shared across servers are lost,
    /// or the data held is going stale); `UNAVAILABLE` (the data store has been out past
    /// the staleness bound); `SCHEDULED_OUTAGE` (a planned outage is under way).
    status: Condition,
    /// What is wrong, for people; present whenever `status` is not `OK`.
    #[serde(skip_serializing_if = "Option::is_none")]
    explanation: Option<String>,
    /// When the current failure was detected (RFC 3339, UTC); present for
    /// `PARTIAL_FAILURE` and `UNAVAILABLE` only, the same while the failure lasts.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    detection_time: Option<String>,
    /// When full service is expected back, if known (a planned outage's end); never with
    /// `OK`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    expected_resolution_time: Option<String>,
    /// When this status last changed (RFC 3339, UTC).
    #[schema(format = DateTime)]
    update_time: String,
}

/// The status values, as CDR writes them.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Condition {
    /// Everything works.
    Ok,
    /// Part of the service fails.
    PartialFailure,
    /// The service cannot answer.
    Unavailable,
    /// A planned outage is under way.
    ScheduledOutage,
}

impl From<ServiceCondition> for Condition {
    fn from(condition: ServiceCondition) -> Self {
        match condition {
            ServiceCondition::Ok => Self::Ok,
            ServiceCondition::PartialFailure => Self::PartialFailure,
            ServiceCondition::Unavailable => Self::Unavailable,
            ServiceCondition::ScheduledOutage => Self::ScheduledOutage,
        }
    }
}

/// `ResponseDiscoveryOutagesList`.
#[derive(Serialize, ToSchema)]
pub struct OutagesResponse {
    /// The planned outages.
    data: OutagesData,
    /// A link to this document.
    links: SelfLink,
    /// Empty (CDR).
    meta: EmptyMeta,
}

/// The planned outages not over yet.
#[derive(Serialize, ToSchema)]
struct OutagesData {
    /// Soonest first; empty when none is planned.
    outages: Vec<Outage>,
}

/// `DiscoveryOutage`: one planned outage.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Outage {
    /// When it starts (RFC 3339, UTC).
    #[schema(format = DateTime, example = "2026-12-05T02:00:00Z")]
    outage_time: String,
    /// How long it lasts: an ISO 8601 duration (`PT2H`, `P1DT30M`).
    #[schema(example = "PT2H")]
    duration: String,
    /// Only part of the service goes; absent when all of it does.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    is_partial: bool,
    /// What customers are told.
    #[schema(example = "Database upgrade: tokens cannot be issued.")]
    explanation: String,
}

/// `LinksSelf`.
#[derive(Serialize, ToSchema)]
struct SelfLink {
    /// The absolute URI of this document.
    #[serde(rename = "self")]
    self_link: String,
}

/// `Meta`: an empty object.
#[derive(Serialize, ToSchema)]
struct EmptyMeta {}

/// `at` (seconds since the epoch) as RFC 3339 in UTC (`2026-11-27T03:00:00Z`).
fn date_time(at: i64) -> String {
    OffsetDateTime::from_unix_timestamp(at)
        .ok()
        .and_then(|at| at.format(&Rfc3339).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

impl StatusResponse {
    /// The wire form of `status`, served from `public_base_url`.
    pub fn of(status: ServiceStatus, public_base_url: &str) -> Self {
        Self {
            data: StatusData {
                status: status.condition.into(),
                explanation: status.explanation,
                detection_time: status.detection_time.map(date_time),
                expected_resolution_time: status.expected_resolution_time.map(date_time),
                update_time: date_time(status.update_time),
            },
            links: SelfLink { self_link: format!("{public_base_url}/api/v1/discovery/status") },
            meta: EmptyMeta {},
        }
    }
}

impl OutagesResponse {
    /// The wire form of `outages`, served from `public_base_url`.
    pub fn of(outages: &[PlannedOutage], public_base_url: &str) -> Self {
        let outages = outages
            .iter()
            .map(|outage| Outage {
                outage_time: date_time(outage.starts_at),
                duration: outage.duration.to_string(),
                is_partial: outage.partial,
                explanation: outage.explanation.as_str().to_owned(),
            })
            .collect();
        Self {
            data: OutagesData { outages },
            links: SelfLink { self_link: format!("{public_base_url}/api/v1/discovery/outages") },
            meta: EmptyMeta {},
        }
    }
}

/// A public answer: JSON any page may read, cached briefly.
fn public(body: &impl Serialize) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL)))
        .json(body)
}

/// GET /api/v1/discovery/status: the service's status.
#[utoipa::path(
    get,
    path = "/v1/discovery/status",
    tag = "Discovery",
    operation_id = "getStatus",
    summary = "The service's status (CDR-shaped)",
    description = "Public: no credentials, readable from any origin (`Access-Control-Allow-Origin: *`). Derived \
                   every refresh from what the service observes of itself and the outages planned; every \
                   instance says the same within a refresh.",
    responses((status = 200, description = "The status.", body = StatusResponse,
        headers(
            ("Cache-Control" = String, description = "`public, max-age=2`."),
            ("Access-Control-Allow-Origin" = String, description = "`*`."),
        ),
        example = json!({"data": {"status": "PARTIAL_FAILURE", "explanation": "New visitor tokens cannot be issued: the data store does not answer. Wait times and ATMs are answered from data held in memory, and tokens already issued keep working.", "detectionTime": "2026-11-27T03:12:09Z", "updateTime": "2026-11-27T03:12:09Z"}, "links": {"self": "https://api.example.mx/api/v1/discovery/status"}, "meta": {}}))),
)]
pub async fn status(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    let state = AppState::serving::<Meta>(&request)?;
    Ok(public(&StatusResponse::of(state.discovery.status(), &state.public_base_url)))
}

/// GET /api/v1/discovery/outages: the planned outages not over yet, soonest first.
#[utoipa::path(
    get,
    path = "/v1/discovery/outages",
    tag = "Discovery",
    operation_id = "getOutages",
    summary = "Planned outages (CDR-shaped)",
    description = "Public: no credentials, readable from any origin (`Access-Control-Allow-Origin: *`). Outages \
                   operators schedule (`branch-atm outages schedule`) appear within a refresh and leave once \
                   over or cancelled.",
    responses((status = 200, description = "The planned outages.", body = OutagesResponse,
        headers(
            ("Cache-Control" = String, description = "`public, max-age=2`."),
            ("Access-Control-Allow-Origin" = String, description = "`*`."),
        ),
        example = json!({"data": {"outages": [{"outageTime": "2026-12-05T02:00:00Z", "duration": "PT2H", "explanation": "Database upgrade: the service is unavailable."}]}, "links": {"self": "https://api.example.mx/api/v1/discovery/outages"}, "meta": {}}))),
)]
pub async fn outages(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    let state = AppState::serving::<Meta>(&request)?;
    Ok(public(&OutagesResponse::of(&state.discovery.planned_outages(), &state.public_base_url)))
}

#[cfg(test)]
mod tests {
    use domain::outage::{OutageDuration, OutageId};
    use domain::text::Explanation;

    use super::*;

    #[test]
    fn an_ok_status_has_no_explanation_detection_or_resolution_time() {
        let status = ServiceStatus {
            condition: ServiceCondition::Ok,
            explanation: None,
            detection_time: None,
            expected_resolution_time: None,
            update_time: 1_800_000_000,
        };
        let wire = serde_json::to_value(StatusResponse::of(status, "https://api.bank.mx")).unwrap();
        assert_eq!(
            wire,
            serde_json::json!({
                "data": {"status": "OK", "updateTime": "2027-01-15T08:00:00Z"},
                "links": {"self": "https://api.bank.mx/api/v1/discovery/status"},
                "meta": {}
            })
        );
    }

    #[test]
    fn an_outage_is_written_with_its_iso_duration_and_is_partial_only_when_partial() {
        let outage = |partial| PlannedOutage {
            id: OutageId::from_bytes([0; 5]),
            starts_at: 1_800_000_000,
            duration: OutageDuration::from_seconds(5_400).unwrap(),
            partial,
            explanation: Explanation::parse("Upgrade").unwrap(),
        };
        let wire =
            serde_json::to_value(OutagesResponse::of(&[outage(false), outage(true)], "https://api.bank.mx")).unwrap();
        assert_eq!(
            wire["data"]["outages"],
            serde_json::json!([
                {"outageTime": "2027-01-15T08:00:00Z", "duration": "PT1H30M", "explanation": "Upgrade"},
                {"outageTime": "2027-01-15T08:00:00Z", "duration": "PT1H30M", "isPartial": true, "explanation": "Upgrade"}
            ])
        );
    }
}
