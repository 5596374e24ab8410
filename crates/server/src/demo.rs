//! The demo data set's face on the command line: the walk-through `serve` prints. The
//! set itself, and when it is loaded, are the domain's (`domain::demo`,
//! `domain::services::demo`).

use domain::demo::{DEMO_BUSINESS_CODE, DEMO_CHANNEL_ID, DEMO_CLIENT_ID, DEMO_COUNTRY_CODE};

/// A ready-to-paste walk-through with the demo credentials: a token, then wait times.
pub fn curl_walkthrough(base: &str) -> String {
    let insecure = if base.starts_with("https://") { "-k " } else { "" };
    format!(
        r#"Try it (demo data; the docs are at {base}/api/docs/, jq reads the token):
  curl -s {insecure}-D authorize.headers -o authorize.json -H "uuid: $(cat /proc/sys/kernel/random/uuid)" \
    "{base}/api/v1/authorize?response_type=token&client_id={DEMO_CLIENT_ID}&businessCode={DEMO_BUSINESS_CODE}&countryCode={DEMO_COUNTRY_CODE}&channelId={DEMO_CHANNEL_ID}"
  TOKEN=$(jq -r .access_token authorize.json)
  SID=$(awk 'tolower($1) == "sid:" {{ print $2 }}' authorize.headers | tr -d '\r')
  curl -s {insecure}-X POST "{base}/api/v1/open-banking/channels/branch/waittime/retrieve" \
    -H "Authorization: Bearer $TOKEN" -H "sid: $SID" -H "client_id: {DEMO_CLIENT_ID}" \
    -H "uuid: $(cat /proc/sys/kernel/random/uuid)" -H "Accept: application/json" -H "Content-Type: application/json" \
    -H "countryCode: {DEMO_COUNTRY_CODE}" -H "businessCode: {DEMO_BUSINESS_CODE}" -H "ChannelId: {DEMO_CHANNEL_ID}" \
    -d '{{"branches":[{{"branchId":"00001"}},{{"branchId":"00042"}}]}}'"#
    )
}
