//! The demo data set loaded into an empty store on a first `serve`: a client per
//! channel, the supported channels, and a few hundred branches with wait times. It is
//! deterministic, so the README's examples always answer the same.

use adapters::store::{AdminError, Store, WaitTimeEstimate};
use domain::branch::{BranchId, BranchWaitTime, WaitTime};
use domain::client::{
    BusinessCode, ChannelId, ChannelScope, ClientId, ClientRegistration, ClientStatus, CountryCode, RedirectUri,
};
use domain::ports::StoreUnavailable;

use crate::startup::unix_now;

/// The demo mobile client's id (README examples use it).
pub const DEMO_CLIENT_ID: &str = "demo-mobile-app";
/// Its channel.
pub const DEMO_CHANNEL_ID: &str = "MOBILE";
/// The bank's country (DECISIONS.md).
pub const DEMO_COUNTRY_CODE: &str = "MX";
/// The bank's business code (DECISIONS.md).
pub const DEMO_BUSINESS_CODE: &str = "GCB";
/// How many demo branches: ids 00001 to 00300.
pub const DEMO_BRANCHES: usize = 300;

fn scope(channel: &str) -> Result<ChannelScope, StoreUnavailable> {
    let invalid = |what: &str| StoreUnavailable::new(format!("the demo {what} is invalid"));
    Ok(ChannelScope {
        country: CountryCode::parse(DEMO_COUNTRY_CODE).map_err(|_| invalid("country"))?,
        business: BusinessCode::parse(DEMO_BUSINESS_CODE).map_err(|_| invalid("business"))?,
        channel: ChannelId::parse(channel).map_err(|_| invalid("channel"))?,
    })
}

/// A wait between 0 and 45 minutes that looks random but is the same every time.
fn demo_minutes(index: usize) -> u32 {
    ((index * 7919 + 13) % 46) as u32
}

/// Loads the demo data set.
///
/// # Errors
/// [`StoreUnavailable`] if the store refuses a write.
pub async fn load(store: &dyn Store) -> Result<(), StoreUnavailable> {
    let now = unix_now();
    for (client_id, channel, redirect) in [
        (DEMO_CLIENT_ID, DEMO_CHANNEL_ID, "https://demo.bank.example.mx/mobile/callback"),
        ("demo-web-app", "WEB", "https://demo.bank.example.mx/web/callback"),
    ] {
        let client = ClientRegistration {
            client_id: ClientId::parse(client_id).map_err(|_| StoreUnavailable::new("demo client id"))?,
            scope: scope(channel)?,
            redirect_uris: vec![RedirectUri::parse(redirect).map_err(|_| StoreUnavailable::new("demo redirect URI"))?],
            status: ClientStatus::Active,
        };
        match store.register_client(&client, now).await {
            Ok(()) | Err(AdminError::AlreadyExists(_)) => {}
            Err(AdminError::NotFound(what)) => return Err(StoreUnavailable::new(what)),
            Err(AdminError::Unavailable(cause)) => return Err(cause),
        }
        store.allow_channel(&client.scope).await?;
    }
    let estimates: Vec<WaitTimeEstimate> = (1..=DEMO_BRANCHES)
        .filter_map(|index| {
            Some(WaitTimeEstimate {
                estimate: BranchWaitTime {
                    branch: BranchId::from_index(index)?,
                    wait: WaitTime::from_minutes(demo_minutes(index)).ok()?,
                },
                estimated_at: now,
            })
        })
        .collect();
    store.upsert_wait_times(&estimates).await
}

/// A ready-to-paste walk-through with the demo credentials: a token, then wait times.
pub fn curl_walkthrough(base: &str) -> String {
    let insecure = if base.starts_with("https://") { "-k " } else { "" };
    format!(
        r#"Try it (demo data):
  curl -si {insecure}-H "uuid: $(cat /proc/sys/kernel/random/uuid)" \
    "{base}/api/v1/authorize?response_type=token&client_id={DEMO_CLIENT_ID}&businessCode={DEMO_BUSINESS_CODE}&countryCode={DEMO_COUNTRY_CODE}&channelId={DEMO_CHANNEL_ID}"
  # then, with access_token and the sid header from that answer:
  curl -s {insecure}-X POST "{base}/api/v1/open-banking/channels/branch/waittime/retrieve" \
    -H "Authorization: Bearer $TOKEN" -H "sid: $SID" -H "client_id: {DEMO_CLIENT_ID}" \
    -H "uuid: $(cat /proc/sys/kernel/random/uuid)" -H "Accept: application/json" -H "Content-Type: application/json" \
    -H "countryCode: {DEMO_COUNTRY_CODE}" -H "businessCode: {DEMO_BUSINESS_CODE}" -H "ChannelId: {DEMO_CHANNEL_ID}" \
    -d '{{"branches":[{{"branchId":"00001"}},{{"branchId":"00042"}}]}}'"#
    )
}
