//! The access log's record: one line per request (method, route, status, latency,
//! request `uuid`, client id, caller address), made by the middleware
//! ([`crate::middleware::observe`]) and handed to whatever writes the log, an
//! [`AccessWriter`] the server gives (its log writer: formats, batches and writes the
//! lines off the request path, `server::access_log`). This crate decides what a line
//! holds; how and where it is written is the server's.

use std::net::IpAddr;

use actix_web::http::Method;

use crate::trace::TraceIds;

/// Where access lines go.
pub trait AccessWriter: Send + Sync {
    /// Whether a request answered `status` is written (`--access-log errors` keeps only
    /// 4xx and 5xx): the middleware gathers nothing for one that is not.
    fn records(&self, status: u16) -> bool;

    /// Writes `line`, without waiting for the log's reader.
    fn write(&self, line: &AccessLine<'_>);
}

/// One request, as the access log writes it.
pub struct AccessLine<'a> {
    /// The method.
    pub method: &'a Method,
    /// The route template (`/api/v1/atms`), or `None` for a path no route matched.
    pub route: Option<&'a str>,
    /// The answer's status.
    pub status: u16,
    /// Microseconds from the request's arrival to its answer.
    pub micros: u64,
    /// The request's `uuid`, when valid.
    pub uuid: Option<&'a str>,
    /// The client id the request names, when valid.
    pub client_id: Option<&'a str>,
    /// The caller's address (the peer, or what a trusted proxy reports).
    pub caller: Option<IpAddr>,
    /// The request's trace and span ids, when the service traces requests.
    pub trace: Option<&'a TraceIds>,
}
