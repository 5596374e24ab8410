//! The demo data set's face on the command line: the walk-through `serve` prints. The
//! set itself, and when it is loaded, are the domain's (`domain::demo`,
//! `domain::services::demo`).

use domain::demo::{DEMO_BUSINESS_CODE, DEMO_CHANNEL_ID, DEMO_CLIENT_ID, DEMO_COUNTRY_CODE};

/// A ready-to-paste walk-through with the demo credentials: a token, then wait times. The
/// token's answer is kept under `$TMPDIR` (or `/tmp`), not in the folder the service was
/// started from, which is often the clone.
pub fn curl_walkthrough(base: &str) -> String {
    let insecure = if base.starts_with("https://") { "-k " } else { "" };
    format!(
        r#"Try it (demo data; the docs are at {base}/api/docs/, jq reads the token):
  curl -s {insecure}-D "${{TMPDIR:-/tmp}}/authorize.headers" -o "${{TMPDIR:-/tmp}}/authorize.json" -H "uuid: $(cat /proc/sys/kernel/random/uuid)" \
    "{base}/api/v1/authorize?response_type=token&client_id={DEMO_CLIENT_ID}&businessCode={DEMO_BUSINESS_CODE}&countryCode={DEMO_COUNTRY_CODE}&channelId={DEMO_CHANNEL_ID}"
  TOKEN=$(jq -r .access_token "${{TMPDIR:-/tmp}}/authorize.json")
  SID=$(awk 'tolower($1) == "sid:" {{ print $2 }}' "${{TMPDIR:-/tmp}}/authorize.headers" | tr -d '\r')
  curl -s {insecure}-X POST "{base}/api/v1/open-banking/channels/branch/waittime/retrieve" \
    -H "Authorization: Bearer $TOKEN" -H "sid: $SID" -H "client_id: {DEMO_CLIENT_ID}" \
    -H "uuid: $(cat /proc/sys/kernel/random/uuid)" -H "Accept: application/json" -H "Content-Type: application/json" \
    -H "countryCode: {DEMO_COUNTRY_CODE}" -H "businessCode: {DEMO_BUSINESS_CODE}" -H "ChannelId: {DEMO_CHANNEL_ID}" \
    -d '{{"branches":[{{"branchId":"00001"}},{{"branchId":"00042"}}]}}'"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walkthrough_writes_its_files_under_tmpdir_not_into_the_current_folder() {
        let walkthrough = curl_walkthrough("http://127.0.0.1:8080");
        let files = walkthrough.matches("authorize.").count();
        assert_eq!(files, 4, "{walkthrough}");
        assert_eq!(walkthrough.matches("${TMPDIR:-/tmp}/authorize.").count(), files, "{walkthrough}");
    }
}
