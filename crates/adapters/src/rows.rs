//! Rows as every SQL backend reads and writes them, to and from the domain's values:
//! the mapping lives here once, so a backend module holds only its connect options,
//! migrations and SQL. Times are Unix seconds (a queue event's: microseconds), statuses
//! and lists are text.

use domain::atm_catalog::StoredAtm;
use domain::atm_closure::{AtmClosure, day_of, day_start};
use domain::atm_feed::{AtmChange, ChangeKind, LoggedChange};
use domain::atm_state::{AtmId, AtmState, Reason, Reported, Services};
use domain::branch::{BranchId, BranchWaitTime, WaitTime, WaitTimeEstimate};
use domain::client::{
    BusinessCode, ChannelId, ChannelScope, ClientId, ClientRegistration, ClientStatus, CountryCode, Origin, RedirectUri,
};
use domain::dpop::DpopPolicy;
use domain::outage::{OutageDuration, OutageId, PlannedOutage};
use domain::ports::{ReceivedEvent, StoreUnavailable};
use domain::posted::{EventId, EventTime};
use domain::queue::event::{CounterId, QueueEvent, QueueEventKind, TicketId};
use domain::system::{PublicKeySet, SystemId, SystemRegistration, SystemScopes};
use domain::text::Explanation;
use domain::token::{CodeChallenge, IssuedToken, OpaqueToken, SessionId, SigningKey, TokenId, TokenRecord};

/// A value in the store that the domain refuses: written around the service, or a bug.
pub fn corrupt(what: &str, value: &str) -> StoreUnavailable {
    StoreUnavailable::new(format!("the store holds an invalid {what}: {value:?}"))
}

/// `atms`: brand name, identification, record (JSON), service bits, accessibility bits,
/// latitude, longitude (both or neither).
pub type AtmRow = (String, String, String, i64, i64, Option<f64>, Option<f64>);

/// An ATM as stored, validated when it was imported: the row is taken as it is.
///
/// # Errors
/// [`StoreUnavailable`] for bit sets that no code list has (written around the service).
pub fn atm(
    (brand, identification, record, services, accessibility, latitude, longitude): AtmRow,
) -> Result<StoredAtm, StoreUnavailable> {
    let bits = |value: i64, what: &str| u32::try_from(value).map_err(|_| corrupt(what, &value.to_string()));
    Ok(StoredAtm {
        services: bits(services, "ATM service set")?,
        accessibility: bits(accessibility, "ATM accessibility set")?,
        coordinates: latitude.zip(longitude),
        brand,
        identification,
        record,
    })
}

/// `clients`: client id, country, business, channel, redirect URIs and added origins
/// (JSON lists), status.
pub type ClientRow = (String, String, String, String, String, String, String, String);

/// A client's status as stored.
pub fn status_text(status: ClientStatus) -> &'static str {
    match status {
        ClientStatus::Active => "active",
        ClientStatus::Disabled => "disabled",
    }
}

/// A status as [`status_text`] stored it (a client's or a system's: `what`).
fn stored_status(status: &str, what: &str) -> Result<ClientStatus, StoreUnavailable> {
    match status {
        "active" => Ok(ClientStatus::Active),
        "disabled" => Ok(ClientStatus::Disabled),
        _ => Err(corrupt(what, status)),
    }
}

/// Redirect URIs as stored: a JSON list of strings.
///
/// # Errors
/// [`StoreUnavailable`] if they cannot be encoded (they always can).
pub fn redirect_uris_text(uris: &[RedirectUri]) -> Result<String, StoreUnavailable> {
    list_text(uris.iter().map(RedirectUri::as_str))
}

/// Added origins as stored: a JSON list of strings.
///
/// # Errors
/// [`StoreUnavailable`] if they cannot be encoded (they always can).
pub fn origins_text(origins: &[Origin]) -> Result<String, StoreUnavailable> {
    list_text(origins.iter().map(Origin::as_str))
}

fn list_text<'a>(items: impl Iterator<Item = &'a str>) -> Result<String, StoreUnavailable> {
    serde_json::to_string(&items.collect::<Vec<_>>()).map_err(StoreUnavailable::new)
}

/// The items of a stored JSON list of `what`, each parsed.
fn list<T, E>(text: &str, what: &str, parse: impl Fn(&str) -> Result<T, E>) -> Result<Vec<T>, StoreUnavailable> {
    let items: Vec<String> = serde_json::from_str(text).map_err(|_| corrupt(&format!("{what} list"), text))?;
    items.iter().map(|item| parse(item).map_err(|_| corrupt(what, item))).collect()
}

/// (country, business, channel) as stored.
///
/// # Errors
/// [`StoreUnavailable`] naming the value the domain refuses.
pub fn scope(country: &str, business: &str, channel: &str) -> Result<ChannelScope, StoreUnavailable> {
    Ok(ChannelScope {
        country: CountryCode::parse(country).map_err(|_| corrupt("country code", country))?,
        business: BusinessCode::parse(business).map_err(|_| corrupt("business code", business))?,
        channel: ChannelId::parse(channel).map_err(|_| corrupt("channel id", channel))?,
    })
}

/// A client registration.
///
/// # Errors
/// [`StoreUnavailable`] naming the value the domain refuses.
pub fn client(
    (client_id, country, business, channel, uris, origins, status, dpop): ClientRow,
) -> Result<ClientRegistration, StoreUnavailable> {
    Ok(ClientRegistration {
        scope: scope(&country, &business, &channel)?,
        client_id: ClientId::parse(&client_id).map_err(|_| corrupt("client id", &client_id))?,
        redirect_uris: list(&uris, "redirect URI", RedirectUri::parse)?,
        allowed_origins: list(&origins, "origin", Origin::parse)?,
        status: stored_status(&status, "client status")?,
        dpop: DpopPolicy::parse(&dpop).map_err(|_| corrupt("client DPoP policy", &dpop))?,
    })
}

/// `branch_wait_times`: branch id, minutes, estimated at.
pub type WaitTimeRow = (String, i64, i64);

/// A branch's estimate.
///
/// # Errors
/// [`StoreUnavailable`] naming the value the domain refuses.
pub fn wait_time((branch, minutes, estimated_at): WaitTimeRow) -> Result<WaitTimeEstimate, StoreUnavailable> {
    Ok(WaitTimeEstimate {
        estimate: BranchWaitTime {
            branch: BranchId::parse(&branch).map_err(|_| corrupt("branch id", &branch))?,
            wait: u32::try_from(minutes)
                .ok()
                .and_then(|m| WaitTime::from_minutes(m).ok())
                .ok_or_else(|| corrupt("wait time", &minutes.to_string()))?,
        },
        estimated_at,
    })
}

/// `issued_tokens`: jti, opaque token, client id, session, issued at, expires at, PKCE
/// challenge, revoked at.
pub type TokenRow = (String, String, String, String, i64, i64, Option<String>, Option<i64>);

/// An issued token's record.
///
/// # Errors
/// [`StoreUnavailable`] naming the value the domain refuses.
pub fn token(
    (jti, opaque, client_id, session, issued_at, expires_at, challenge, revoked_at): TokenRow,
) -> Result<TokenRecord, StoreUnavailable> {
    Ok(TokenRecord {
        token: IssuedToken {
            token_id: TokenId::new(jti),
            opaque_token: OpaqueToken::new(opaque),
            client_id: ClientId::parse(&client_id).map_err(|_| corrupt("client id", &client_id))?,
            session: SessionId::new(session),
            issued_at,
            expires_at,
            code_challenge: challenge
                .map(|c| CodeChallenge::parse(&c).map_err(|_| corrupt("code challenge", &c)))
                .transpose()?,
        },
        revoked_at,
    })
}

/// `signing_keys`: kid, private key, public key, created at, activates at, retired at,
/// revoked at.
pub type SigningKeyRow = (String, Vec<u8>, Vec<u8>, i64, i64, Option<i64>, Option<i64>);

/// A signing key.
pub fn signing_key(
    (kid, private_pkcs8, public_key, created_at, activates_at, retired_at, revoked_at): SigningKeyRow,
) -> SigningKey {
    SigningKey { kid, private_pkcs8, public_key, created_at, activates_at, retired_at, revoked_at }
}

/// `import_runs`: kind, outcome, runs, last run's time.
pub type ImportRunRow = (String, String, i64, i64);

/// The counts of `rows`; a kind or outcome this build does not know (a newer one wrote
/// it) is left out, not an error: the counts are for watching, never for deciding.
pub fn import_tally(rows: Vec<ImportRunRow>) -> Vec<domain::ports::ImportTally> {
    use domain::ports::{ImportKind, ImportOutcome, ImportTally};
    rows.into_iter()
        .filter_map(|(kind, outcome, runs, last_at)| {
            Some(ImportTally {
                kind: ImportKind::ALL.into_iter().find(|k| k.label() == kind)?,
                outcome: ImportOutcome::ALL.into_iter().find(|o| o.label() == outcome)?,
                runs: u64::try_from(runs).ok()?,
                last_at,
            })
        })
        .collect()
}

/// `planned_outages`: id, start, duration in seconds, partial (0 or 1), explanation.
pub type OutageRow = (String, i64, i64, i64, String);

/// A planned outage.
///
/// # Errors
/// [`StoreUnavailable`] for a row the domain refuses (written around the service).
pub fn outage((id, starts_at, duration, partial, explanation): OutageRow) -> Result<PlannedOutage, StoreUnavailable> {
    Ok(PlannedOutage {
        id: OutageId::parse(&id).map_err(|_| corrupt("outage id", &id))?,
        starts_at,
        duration: OutageDuration::from_seconds(duration)
            .map_err(|_| corrupt("outage duration", &duration.to_string()))?,
        partial: partial != 0,
        explanation: Explanation::parse(&explanation).map_err(|_| corrupt("outage explanation", &explanation))?,
    })
}

/// `atm_closures`: ATM id, 00:00 UTC of the date (Unix seconds), explanation, the
/// reason for a short notice, when announced.
pub type AtmClosureRow = (String, i64, String, Option<String>, i64);

/// A closure announced.
///
/// # Errors
/// [`StoreUnavailable`] for a row the domain refuses (written around the service).
pub fn atm_closure(
    (atm, closes_on, explanation, short_notice, announced_at): AtmClosureRow,
) -> Result<AtmClosure, StoreUnavailable> {
    let said = |text: &str| Explanation::parse(text).map_err(|_| corrupt("closure explanation", text));
    let day = day_of(closes_on);
    if day_start(day) != closes_on {
        return Err(corrupt("closure date", &closes_on.to_string()));
    }
    Ok(AtmClosure {
        atm: AtmId::parse(&atm).ok_or_else(|| corrupt("closure ATM id", &atm))?,
        closes_on: day,
        explanation: said(&explanation)?,
        short_notice: short_notice.as_deref().map(said).transpose()?,
        announced_at,
    })
}

/// The row of `closure`'s columns to write, as [`AtmClosureRow`] reads them.
pub fn atm_closure_row(closure: &AtmClosure) -> AtmClosureRow {
    (
        closure.atm.as_str().to_owned(),
        closure.starts_at(),
        closure.explanation.as_str().to_owned(),
        closure.short_notice.as_ref().map(|text| text.as_str().to_owned()),
        closure.announced_at,
    )
}

/// `atm_changes`: number, brand, ATM id, change, when (microseconds), body.
pub type AtmChangeRow = (i64, Option<String>, String, String, i64, Option<String>);

/// A change of the feed as numbered.
///
/// # Errors
/// [`StoreUnavailable`] for a change the domain does not know (written around the service).
pub fn atm_change((seq, brand, atm, change, at, body): AtmChangeRow) -> Result<LoggedChange, StoreUnavailable> {
    let kind = ChangeKind::parse(&change).ok_or_else(|| corrupt("feed change", &change))?;
    Ok(LoggedChange { seq, change: AtmChange { brand, atm, kind, at: EventTime::from_unix_micros(at), body } })
}

/// `systems`: id, JWKS document, how many keys it holds, scope string, status.
pub type SystemRow = (String, String, i64, String, String);

/// How many keys a system's key set holds, as stored.
///
/// # Errors
/// [`StoreUnavailable`] if the count does not fit a column (it always does).
pub fn key_count(keys: &PublicKeySet) -> Result<i64, StoreUnavailable> {
    i64::try_from(keys.len()).map_err(StoreUnavailable::new)
}

/// A system's registration. Its JWKS is taken as stored with the count stored beside it:
/// the adapter that read the file checked it, and the domain cannot read a JWKS again.
///
/// # Errors
/// [`StoreUnavailable`] naming the value the domain refuses (written around the service).
pub fn system((id, jwks, keys, scopes, status): SystemRow) -> Result<SystemRegistration, StoreUnavailable> {
    let count = usize::try_from(keys).ok().filter(|&count| count > 0);
    Ok(SystemRegistration {
        id: SystemId::parse(&id).map_err(|_| corrupt("system id", &id))?,
        keys: PublicKeySet::checked(jwks, count.ok_or_else(|| corrupt("system key count", &keys.to_string()))?),
        scopes: SystemScopes::parse(&scopes).map_err(|_| corrupt("system scope string", &scopes))?,
        status: stored_status(&status, "system status")?,
    })
}

/// `queue_events`: event id, branch number, kind (the wire's `type`), when it happened,
/// ticket, counter, the system that posted it, when it was received (both times in
/// microseconds since the Unix epoch).
pub type QueueEventRow = (String, i32, String, i64, Option<String>, Option<String>, String, i64);

/// A branch's number as `queue_events` stores it.
///
/// # Errors
/// [`StoreUnavailable`] if it does not fit the column (a branch id never fails to).
pub fn branch_number(branch: BranchId) -> Result<i32, StoreUnavailable> {
    i32::try_from(branch.index()).map_err(StoreUnavailable::new)
}

/// A queue event as stored, with who posted it and when it was received.
///
/// # Errors
/// [`StoreUnavailable`] naming the value the domain refuses (written around the service).
pub fn received_event(
    (id, branch, kind, at, ticket, counter, system, received_at): QueueEventRow,
) -> Result<ReceivedEvent, StoreUnavailable> {
    let ticket = || {
        let stored = ticket.as_deref().unwrap_or_default();
        TicketId::parse(stored).ok_or_else(|| corrupt("queue event ticket", stored))
    };
    let counter = || {
        let stored = counter.as_deref().unwrap_or_default();
        CounterId::parse(stored).ok_or_else(|| corrupt("queue event counter", stored))
    };
    let kind = QueueEventKind::read(&kind, ticket, counter).ok_or_else(|| corrupt("queue event type", &kind))??;
    let stored_branch = usize::try_from(branch).ok().and_then(BranchId::from_index);
    Ok(ReceivedEvent {
        event: QueueEvent {
            id: EventId::parse(&id).ok_or_else(|| corrupt("queue event id", &id))?,
            branch: stored_branch.ok_or_else(|| corrupt("queue event branch number", &branch.to_string()))?,
            at: EventTime::from_unix_micros(at),
            kind,
        },
        system: SystemId::parse(&system).map_err(|_| corrupt("system id", &system))?,
        received_at: EventTime::from_unix_micros(received_at),
    })
}

/// An ATM's state as `atm_states` stores it: (ATM id, state, unavailable services' bits,
/// reason, expected back at, since, heard at, heard event id).
pub type AtmStateRow = (String, String, i64, Option<String>, Option<i64>, i64, i64, String);

/// An ATM's state as stored.
///
/// # Errors
/// [`StoreUnavailable`] naming the value the domain refuses (written around the service).
pub fn atm_state(
    (atm, state, unavailable, reason, expected_back_at, since, heard_at, heard_id): AtmStateRow,
) -> Result<(AtmId, AtmState), StoreUnavailable> {
    let reason = reason.map(|raw| Reason::parse(&raw).ok_or_else(|| corrupt("ATM state reason", &raw))).transpose()?;
    Ok((
        AtmId::parse(&atm).ok_or_else(|| corrupt("ATM id", &atm))?,
        AtmState {
            state: Reported::parse(&state).ok_or_else(|| corrupt("ATM state", &state))?,
            unavailable: Services(
                u32::try_from(unavailable).map_err(|_| corrupt("ATM services", &unavailable.to_string()))?,
            ),
            reason,
            expected_back_at: expected_back_at.map(EventTime::from_unix_micros),
            since: EventTime::from_unix_micros(since),
            heard: (
                EventTime::from_unix_micros(heard_at),
                EventId::parse(&heard_id).ok_or_else(|| corrupt("state event id", &heard_id))?,
            ),
        },
    ))
}
