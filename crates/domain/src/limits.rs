//! Request limits: the rates the service holds callers to, and what a request is counted
//! under. Which limits a request counts against is the HTTP layer's policy
//! (`api::rate_limit`); counting them is a [`RequestLimiter`](crate::ports::RequestLimiter)'s,
//! in this instance or where every instance counts (Redis).

use std::future::Future;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::client::ClientId;
use crate::token::SessionId;

/// A sustained rate with bursts above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests a second, sustained.
    pub per_second: NonZeroU32,
    /// Requests allowed at once above that.
    pub burst: NonZeroU32,
}

impl Rate {
    /// A rate no test or benchmark reaches.
    pub const UNLIMITED: Self = Self { per_second: NonZeroU32::MAX, burst: NonZeroU32::MAX };
}

/// Every request limit's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// Token requests per caller address.
    pub issue_per_caller: Rate,
    /// Token requests per client id.
    pub issue_per_client: Rate,
    /// Bearer requests per session.
    pub per_session: Rate,
    /// Bearer requests per caller address.
    pub per_caller: Rate,
    /// Bearer requests per client id.
    pub per_client: Rate,
}

impl RateLimits {
    /// No limit reached by tests.
    pub fn unlimited() -> Self {
        let open = Rate::UNLIMITED;
        Self { issue_per_caller: open, issue_per_client: open, per_session: open, per_caller: open, per_client: open }
    }

    /// The rate of `limit`.
    pub fn of(&self, limit: Limit) -> Rate {
        match limit {
            Limit::IssuePerCaller => self.issue_per_caller,
            Limit::IssuePerClient => self.issue_per_client,
            Limit::PerSession => self.per_session,
            Limit::PerCaller => self.per_caller,
            Limit::PerClient => self.per_client,
        }
    }
}

/// One of the request limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Token requests per caller address.
    IssuePerCaller,
    /// Token requests per client id.
    IssuePerClient,
    /// Bearer requests per session.
    PerSession,
    /// Bearer requests per caller address.
    PerCaller,
    /// Bearer requests per client id.
    PerClient,
}

impl Limit {
    /// Its name in logs, metrics (`branch_atm_rate_limited_total{limit}`) and shared
    /// counts' keys.
    pub fn name(self) -> &'static str {
        match self {
            Self::IssuePerCaller => "issue-caller",
            Self::IssuePerClient => "issue-client",
            Self::PerSession => "session",
            Self::PerCaller => "caller",
            Self::PerClient => "client",
        }
    }
}

/// One count a request takes: a limit and whose count under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitCheck<'a> {
    /// A token request from a caller address (an IPv4 address or an IPv6 /64).
    IssuePerCaller(IpAddr),
    /// A token request for a client.
    IssuePerClient(&'a ClientId),
    /// A bearer request of a session.
    PerSession(&'a SessionId),
    /// A bearer request from a caller address (an IPv4 address or an IPv6 /64).
    PerCaller(IpAddr),
    /// A bearer request for a client.
    PerClient(&'a ClientId),
}

impl LimitCheck<'_> {
    /// The limit it counts under.
    pub fn limit(&self) -> Limit {
        match self {
            Self::IssuePerCaller(_) => Limit::IssuePerCaller,
            Self::IssuePerClient(_) => Limit::IssuePerClient,
            Self::PerSession(_) => Limit::PerSession,
            Self::PerCaller(_) => Limit::PerCaller,
            Self::PerClient(_) => Limit::PerClient,
        }
    }
}

/// A request over one of its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("over the {} request limit; {wait:?} until the next is admitted", limit.name())]
pub struct LimitExceeded {
    /// The limit that refused it.
    pub limit: Limit,
    /// How long until that limit admits a request.
    pub wait: Duration,
}

/// Why a request was not admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// It is over a limit.
    #[error(transparent)]
    Exceeded(#[from] LimitExceeded),
    /// The counts could not be reached (shared limits, unreachable or too slow).
    #[error("the request limits are unavailable: {0}")]
    Unavailable(String),
}

/// A limiter's answer: decided at once when it counts in this process (no allocation,
/// nothing to wait for), or to be awaited when it asks elsewhere. Await it either way.
pub enum Admission<'a> {
    /// Decided; `None` once awaited.
    Decided(Option<Result<(), LimitError>>),
    /// An answer on its way.
    Pending(Pin<Box<dyn Future<Output = Result<(), LimitError>> + Send + 'a>>),
}

impl Admission<'_> {
    /// An answer known now.
    pub fn decided(answer: Result<(), LimitError>) -> Self {
        Self::Decided(Some(answer))
    }
}

impl std::fmt::Debug for Admission<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Decided(answer) => f.debug_tuple("Decided").field(answer).finish(),
            Self::Pending(_) => f.write_str("Pending"),
        }
    }
}

impl Future for Admission<'_> {
    type Output = Result<(), LimitError>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Decided(answer) => Poll::Ready(answer.take().unwrap_or(Ok(()))),
            Self::Pending(answer) => answer.as_mut().poll(context),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_names_its_limit_as_logs_and_metrics_do() {
        let client = ClientId::parse("app").unwrap();
        let names: Vec<_> = [LimitCheck::IssuePerCaller(IpAddr::from([192, 0, 2, 1])), LimitCheck::PerClient(&client)]
            .iter()
            .map(|check| check.limit().name())
            .collect();
        assert_eq!(names, ["issue-caller", "client"]);
        assert_eq!(RateLimits::unlimited().of(Limit::PerSession), Rate::UNLIMITED);
    }
}
