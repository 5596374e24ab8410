//! The demo data set a first start loads into a store that holds no operator data
//! (`crate::services::demo`): a client per channel, the supported channels, a few
//! hundred branches with wait times, and 1,200 ATMs in two brands across sixteen
//! Mexican cities. It is deterministic, so the walk-through's examples
//! (docs/walkthrough.md) always answer the same.

use serde::Serialize;

use crate::atm::{Accessibility, AtmService};
use crate::atm_catalog::StoredAtm;
use crate::branch::{BranchId, BranchWaitTime, WaitTime, WaitTimeEstimate};
use crate::client::{
    BusinessCode, ChannelId, ChannelScope, ClientId, ClientRegistration, ClientStatus, CountryCode, RedirectUri,
};

/// The demo data set does not validate: a bug in this module's tables.
#[derive(Debug, thiserror::Error)]
#[error("the demo data set is invalid: {0}")]
pub struct DemoDataInvalid(pub String);

/// The demo mobile client's id (the README's and docs/walkthrough.md's examples use it).
pub const DEMO_CLIENT_ID: &str = "demo-mobile-app";
/// Its channel.
pub const DEMO_CHANNEL_ID: &str = "MOBILE";
/// The bank's country (docs/contract.md).
pub const DEMO_COUNTRY_CODE: &str = "MX";
/// The bank's business code (docs/contract.md).
pub const DEMO_BUSINESS_CODE: &str = "GCB";
/// How many demo branches: ids 00001 to 00300.
pub const DEMO_BRANCHES: usize = 300;

fn scope(channel: &str) -> Result<ChannelScope, DemoDataInvalid> {
    let invalid = |what: &str| DemoDataInvalid(format!("the demo {what}"));
    Ok(ChannelScope {
        country: CountryCode::parse(DEMO_COUNTRY_CODE).map_err(|_| invalid("country"))?,
        business: BusinessCode::parse(DEMO_BUSINESS_CODE).map_err(|_| invalid("business"))?,
        channel: ChannelId::parse(channel).map_err(|_| invalid("channel"))?,
    })
}

/// The demo clients, one per channel (both supported).
///
/// # Errors
/// [`DemoDataInvalid`] if an entry does not parse (a bug in this table).
pub fn clients() -> Result<Vec<ClientRegistration>, DemoDataInvalid> {
    [
        (DEMO_CLIENT_ID, DEMO_CHANNEL_ID, "https://demo.bank.example.mx/mobile/callback"),
        ("demo-web-app", "WEB", "https://demo.bank.example.mx/web/callback"),
    ]
    .into_iter()
    .map(|(client_id, channel, redirect)| {
        Ok(ClientRegistration {
            client_id: ClientId::parse(client_id).map_err(|_| DemoDataInvalid("demo client id".into()))?,
            scope: scope(channel)?,
            redirect_uris: vec![RedirectUri::parse(redirect).map_err(|_| DemoDataInvalid("demo redirect URI".into()))?],
            allowed_origins: Vec::new(),
            status: ClientStatus::Active,
            dpop: crate::dpop::DpopPolicy::Optional,
        })
    })
    .collect()
}

/// A wait between 0 and 45 minutes that looks random but is the same every time.
fn demo_minutes(index: usize) -> u32 {
    ((index * 7919 + 13) % 46) as u32
}

/// Branches `00001` to `00300` with waits of 0 to 45 minutes, estimated at `now`.
pub fn wait_times(now: i64) -> Vec<WaitTimeEstimate> {
    (1..=DEMO_BRANCHES)
        .filter_map(|index| {
            Some(WaitTimeEstimate {
                estimate: BranchWaitTime {
                    branch: BranchId::from_index(index)?,
                    wait: WaitTime::from_minutes(demo_minutes(index)).ok()?,
                },
                estimated_at: now,
            })
        })
        .collect()
}

/// Whether `rows` are the demo's wait times exactly, as [`wait_times`] made them at one
/// moment (in any order): the demo branches, each with its demo wait, all estimated
/// together.
pub fn is_demo_wait_times(rows: &[WaitTimeEstimate]) -> bool {
    let Some(first) = rows.first() else { return false };
    let mut demo = wait_times(first.estimated_at);
    let mut rows = rows.to_vec();
    demo.sort_by_key(|row| row.estimate.branch);
    rows.sort_by_key(|row| row.estimate.branch);
    rows == demo
}

/// Demo cities: name, state, latitude, longitude, first two digits of their post codes.
const CITIES: [(&str, &str, f64, f64, u32); 16] = [
    ("Ciudad de México", "CDMX", 19.4326, -99.1332, 6),
    ("Guadalajara", "JAL", 20.6597, -103.3496, 44),
    ("Monterrey", "NL", 25.6866, -100.3161, 64),
    ("Puebla", "PUE", 19.0414, -98.2063, 72),
    ("Tijuana", "BC", 32.5149, -117.0382, 22),
    ("León", "GTO", 21.1250, -101.6860, 37),
    ("Querétaro", "QRO", 20.5888, -100.3899, 76),
    ("Mérida", "YUC", 20.9674, -89.5926, 97),
    ("Cancún", "QROO", 21.1619, -86.8515, 77),
    ("Toluca", "MEX", 19.2826, -99.6557, 50),
    ("San Luis Potosí", "SLP", 22.1565, -100.9855, 78),
    ("Aguascalientes", "AGS", 21.8853, -102.2916, 20),
    ("Chihuahua", "CHIH", 28.6330, -106.0691, 31),
    ("Oaxaca", "OAX", 17.0732, -96.7266, 68),
    ("Veracruz", "VER", 19.1738, -96.1342, 91),
    ("Hermosillo", "SON", 29.0729, -110.9559, 83),
];

const STREETS: [&str; 8] = [
    "Avenida Juárez",
    "Calle Hidalgo",
    "Avenida Reforma",
    "Calle Morelos",
    "Avenida Insurgentes",
    "Calle Madero",
    "Boulevard Independencia",
    "Avenida Revolución",
];

/// The demo brands and how many ATMs each has.
pub const DEMO_ATM_BRANDS: [(&str, usize); 2] = [("Banco GCB", 900), ("GCB Express", 300)];

/// A deterministic stream of pseudo-random numbers (PCG's LCG step): the demo set is
/// the same on every machine.
struct Sequence(u64);

impl Sequence {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next(100) < percent
    }
}

/// A demo ATM record: the OBIE ATM 2.3 fields the demo set fills, in the schema's order.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct DemoRecord<'a> {
    identification: &'a str,
    supported_languages: [&'static str; 2],
    #[serde(rename = "ATMServices")]
    atm_services: &'a [AtmService],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    accessibility: &'a [Accessibility],
    access24_hours_indicator: bool,
    supported_currencies: [&'static str; 1],
    minimum_possible_amount: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<Ref>,
    location: DemoLocation,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Ref {
    identification: String,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct DemoLocation {
    location_category: [&'static str; 1],
    postal_address: DemoAddress,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct DemoAddress {
    building_number: String,
    street_name: &'static str,
    town_name: &'static str,
    country_sub_division: [&'static str; 1],
    country: &'static str,
    post_code: String,
    geo_location: GeoLocation,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct GeoLocation {
    geographic_coordinates: Coordinates,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Coordinates {
    latitude: String,
    longitude: String,
}

/// The demo ATM set: 1,200 ATMs in two brands across sixteen Mexican cities, in stored
/// form. Each record is valid OBIE ATM 2.3 (the `api` crate's reader checks every one in
/// its tests) and lists the codes it is stored with.
///
/// # Errors
/// [`DemoDataInvalid`] if a record cannot be written as JSON (which these plain records never cause).
pub fn atms() -> Result<Vec<StoredAtm>, DemoDataInvalid> {
    use AtmService::*;
    let mut random = Sequence(2026);
    let mut atms = Vec::with_capacity(DEMO_ATM_BRANDS.iter().map(|(_, count)| count).sum());
    for (brand_index, (brand, count)) in DEMO_ATM_BRANDS.into_iter().enumerate() {
        let express = brand_index == 1;
        for n in 0..count {
            let (town, state, latitude, longitude, post_prefix) = CITIES[n % CITIES.len()];
            let mut services = vec![CashWithdrawal, Balance, PinChange, MiniStatement];
            for (service, percent) in [
                (CashDeposits, if express { 10 } else { 60 }),
                (MobilePhoneTopUp, 50),
                (BillPayments, 40),
                (ChequeDeposits, if express { 0 } else { 20 }),
                (FastCash, 30),
                (MobileBankingRegistration, 25),
            ] {
                if random.chance(percent) {
                    services.push(service);
                }
            }
            let accessibility: Vec<Accessibility> = [
                (Accessibility::WheelchairAccess, 55),
                (Accessibility::AudioCashMachine, 25),
                (Accessibility::LevelAccess, 40),
            ]
            .into_iter()
            .filter(|(_, percent)| random.chance(*percent))
            .map(|(feature, _)| feature)
            .collect();
            let offset = |random: &mut Sequence| (random.next(16_000) as f64 - 8_000.0) / 100_000.0;
            let code: String = state.chars().take(3).collect();
            let identification = format!("{}-{code}-{n:04}", if express { "GCBX" } else { "GCB" });
            let building = (1 + random.next(2_000)).to_string();
            let street = STREETS[random.next(STREETS.len() as u64) as usize];
            let post_code = format!("{post_prefix:02}{:03}", random.next(1_000));
            let at = (latitude + offset(&mut random), longitude + offset(&mut random));
            // As written in the record (six decimals), and as a reader of it gets them back.
            let written = (format!("{:.6}", at.0), format!("{:.6}", at.1));
            let coordinates = (written.0.parse().unwrap_or(at.0), written.1.parse().unwrap_or(at.1));
            let branch = (!express).then(|| Ref { identification: format!("{:05}", 1 + n % DEMO_BRANCHES) });
            let category = if express {
                if n % 2 == 0 { "RetailerOutlet" } else { "RemoteUnit" }
            } else if n % 4 == 0 {
                "BranchLobby"
            } else {
                "BranchExternal"
            };
            let record = DemoRecord {
                identification: &identification,
                supported_languages: ["es", "en"],
                atm_services: &services,
                accessibility: &accessibility,
                access24_hours_indicator: n % 3 != 0,
                supported_currencies: ["MXN"],
                minimum_possible_amount: if express { "50.00" } else { "100.00" },
                branch,
                location: DemoLocation {
                    location_category: [category],
                    postal_address: DemoAddress {
                        building_number: building,
                        street_name: street,
                        town_name: town,
                        country_sub_division: [state],
                        country: "MX",
                        post_code,
                        geo_location: GeoLocation {
                            geographic_coordinates: Coordinates { latitude: written.0, longitude: written.1 },
                        },
                    },
                },
            };
            atms.push(StoredAtm::new(
                brand,
                &identification,
                serde_json::to_string(&record).map_err(|e| DemoDataInvalid(format!("demo ATM: {e}")))?,
                &services,
                &accessibility,
                Some(coordinates),
            ));
        }
    }
    Ok(atms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_set_has_1200_atms_in_two_brands_and_is_the_same_every_time() {
        let atms = atms().unwrap();
        assert_eq!(atms.len(), 1200);
        let mut brands: Vec<&str> = atms.iter().map(|atm| atm.brand.as_str()).collect();
        brands.dedup();
        assert_eq!(brands.len(), 2);
        assert_eq!(atms, super::atms().unwrap());
        assert!(
            atms.iter().all(|atm| atm.coordinates.is_some() && atm.record.contains(r#""SupportedCurrencies":["MXN"]"#))
        );
    }
}
