//! `clients …`: registering, updating, listing, disabling and enabling client applications.

use domain::client::{ClientChanges, ClientId, ClientRegistration, ClientStatus, Origin, RedirectUri};
use domain::dpop::DpopPolicy;
use domain::services::clients::{ClientAdmin, Enabled};

use super::{CommandError, channel_scope, parse, parse_all};
use crate::cli::ClientsAction;

/// `clients …`
///
/// # Errors
/// [`CommandError`] with the reason.
pub async fn clients(admin: &ClientAdmin, action: ClientsAction) -> Result<(), CommandError> {
    match action {
        ClientsAction::Add {
            client_id,
            business_code,
            country_code,
            channel_id,
            redirect_uris,
            allowed_origins,
            dpop,
        } => {
            let client = ClientRegistration {
                client_id: parse("client id", &client_id, ClientId::parse)?,
                scope: channel_scope(&country_code, &business_code, &channel_id)?,
                redirect_uris: parse_all("redirect URI", &redirect_uris, RedirectUri::parse)?,
                allowed_origins: parse_all("origin", &allowed_origins, Origin::parse)?,
                status: ClientStatus::Active,
                dpop: parse("DPoP policy", &dpop, DpopPolicy::parse)?,
            };
            admin.register(&client).await.map_err(|e| CommandError::of(&e))?;
            println!("registered client {client_id}");
        }
        ClientsAction::Update { client_id, redirect_uris, allowed_origins, no_allowed_origins, dpop } => {
            let id = parse("client id", &client_id, ClientId::parse)?;
            let addresses = ClientChanges {
                redirect_uris: (!redirect_uris.is_empty())
                    .then(|| parse_all("redirect URI", &redirect_uris, RedirectUri::parse))
                    .transpose()?,
                allowed_origins: (no_allowed_origins || !allowed_origins.is_empty())
                    .then(|| parse_all("origin", &allowed_origins, Origin::parse))
                    .transpose()?,
                dpop: dpop.as_deref().map(|policy| parse("DPoP policy", policy, DpopPolicy::parse)).transpose()?,
            };
            if addresses == ClientChanges::default() {
                return Err(CommandError(
                    "nothing to update: give --redirect-uri, --allowed-origin, --no-allowed-origins or --dpop".into(),
                ));
            }
            admin.update(&id, &addresses).await.map_err(|e| CommandError::of(&e))?;
            println!("updated client {client_id}");
        }
        ClientsAction::List => {
            println!("client_id\tstatus\tcountryCode\tbusinessCode\tchannelId\tredirect_uris\torigins\tdpop");
            for client in admin.list().await.map_err(|e| CommandError::of(&e))? {
                let uris: Vec<&str> = client.redirect_uris.iter().map(RedirectUri::as_str).collect();
                let origins: Vec<String> = client.origins().iter().map(|o| o.as_str().to_owned()).collect();
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    client.client_id,
                    match client.status {
                        ClientStatus::Active => "active",
                        ClientStatus::Disabled => "disabled",
                    },
                    client.scope.country,
                    client.scope.business,
                    client.scope.channel,
                    uris.join(" "),
                    origins.join(" "),
                    client.dpop.as_str()
                );
            }
        }
        ClientsAction::Disable { client_id } => {
            let id = parse("client id", &client_id, ClientId::parse)?;
            let revoked = admin.disable(&id).await.map_err(|e| CommandError::of(&e))?;
            println!("disabled client {client_id}; revoked {revoked} live token(s)");
        }
        ClientsAction::Enable { client_id } => {
            let id = parse("client id", &client_id, ClientId::parse)?;
            match admin.enable(&id).await.map_err(|e| CommandError::of(&e))? {
                Enabled::Now { revoked } => println!(
                    "enabled client {client_id}; its earlier tokens stay refused ({revoked} issued while it was \
                     disabled were revoked)"
                ),
                Enabled::Already => println!("client {client_id} is already active; nothing changed"),
            }
        }
    }
    Ok(())
}
