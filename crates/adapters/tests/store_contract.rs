//! The contract every [`Store`] keeps, run against each adapter.
//!
//! Each check is an async function over `&dyn Store` on a freshly migrated, empty
//! store; every adapter module below runs all of them.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use adapters::jwt::{Ed25519Keys, JwtTokens};
use adapters::store::Store;
use adapters::system::SystemClock;
use adapters::view::{StoreView, ViewSettings};
use domain::atm_catalog::StoredAtm;
use domain::branch::{BranchId, BranchWaitTime, WaitTime, WaitTimeEstimate};
use domain::client::{ClientAddresses, ClientId, ClientRegistration, ClientStatus, Origin, RedirectUri};
use domain::ports::{
    AccessPolicy, AtmDirectory, ClientRegistry, KeyGenerator as _, TOKEN_PURGE_GRANULARITY_SECONDS, TokenLedger,
    WaitTimeStore,
};
use domain::store_contents::StoreContents;
use domain::testing::scope;
use domain::token::{CodeChallenge, IssuedToken, KeyState, OpaqueToken, SessionId, SigningKey, TokenId};

const NOW: i64 = 1_800_000_000;

fn client(id: &str) -> ClientRegistration {
    ClientRegistration {
        client_id: ClientId::parse(id).unwrap(),
        scope: scope("MOBILE"),
        redirect_uris: vec![RedirectUri::parse("https://app.example.mx/cb").unwrap()],
        allowed_origins: Vec::new(),
        status: ClientStatus::Active,
    }
}

fn estimate(branch: &str, minutes: u32) -> WaitTimeEstimate {
    WaitTimeEstimate {
        estimate: BranchWaitTime {
            branch: BranchId::parse(branch).unwrap(),
            wait: WaitTime::from_minutes(minutes).unwrap(),
        },
        estimated_at: NOW,
    }
}

fn token(n: u32, client_id: &str, expires_at: i64) -> IssuedToken {
    IssuedToken {
        token_id: TokenId::new(format!("jti-{n}")),
        opaque_token: OpaqueToken::new(format!("opaque-{n}")),
        client_id: ClientId::parse(client_id).unwrap(),
        session: SessionId::new(format!("session-{n}")),
        issued_at: NOW,
        expires_at,
        code_challenge: n
            .is_multiple_of(2)
            .then(|| CodeChallenge::parse("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM").unwrap()),
    }
}

async fn a_store_tells_which_kinds_of_data_it_holds(store: &Store) {
    assert_eq!(store.inventory.contents().await.unwrap(), StoreContents::default(), "a new store holds nothing");
    store.wait_times.upsert(&[estimate("00001", 3)]).await.unwrap();
    assert_eq!(
        store.inventory.contents().await.unwrap(),
        StoreContents { wait_times: true, ..StoreContents::default() }
    );
    assert!(store.clients.insert(&client("bank-app"), NOW).await.unwrap());
    store.channels.allow(&scope("MOBILE")).await.unwrap();
    store.tokens.record(&[token(1, "bank-app", NOW + 60)]).await.unwrap();
    store.atms.replace(&brand("Alfa", &["A1"]), NOW).await.unwrap();
    let every_kind =
        StoreContents { clients: true, supported_channels: true, wait_times: true, atms: true, token_records: true };
    assert_eq!(store.inventory.contents().await.unwrap(), every_kind);
}

async fn clients_round_trip_and_cannot_be_registered_twice(store: &Store) {
    assert!(store.clients.insert(&client("b-app"), NOW).await.unwrap());
    assert!(store.clients.insert(&client("a-app"), NOW).await.unwrap());
    assert!(!store.clients.insert(&client("a-app"), NOW).await.unwrap(), "a client id is inserted once");
    let listed = store.clients.all().await.unwrap();
    assert_eq!(listed, vec![client("a-app"), client("b-app")]);
}

async fn a_clients_addresses_are_replaced_list_by_list(store: &Store) {
    let mut registered = client("a-app");
    registered.allowed_origins = vec![Origin::parse("https://one.example.mx").unwrap()];
    assert!(store.clients.insert(&registered, NOW).await.unwrap());
    assert_eq!(store.clients.all().await.unwrap(), vec![registered.clone()], "origins round-trip");
    let origins =
        vec![Origin::parse("https://two.example.mx").unwrap(), Origin::parse("http://127.0.0.1:8000").unwrap()];
    let only_origins = ClientAddresses { redirect_uris: None, allowed_origins: Some(origins.clone()) };
    let id = ClientId::parse("a-app").unwrap();
    assert!(store.clients.set_addresses(&id, &only_origins).await.unwrap());
    let updated = store.clients.all().await.unwrap().remove(0);
    assert_eq!((updated.allowed_origins, updated.redirect_uris), (origins, registered.redirect_uris.clone()));
    let uris = vec![RedirectUri::parse("https://three.example.mx/cb").unwrap()];
    let only_uris = ClientAddresses { redirect_uris: Some(uris.clone()), allowed_origins: None };
    assert!(store.clients.set_addresses(&id, &only_uris).await.unwrap());
    let updated = store.clients.all().await.unwrap().remove(0);
    assert_eq!((updated.redirect_uris, updated.allowed_origins.len()), (uris, 2));
    assert!(!store.clients.set_addresses(&ClientId::parse("nobody").unwrap(), &only_uris).await.unwrap());
}

async fn a_clients_status_is_set_and_its_live_tokens_revoked(store: &Store) {
    assert!(store.clients.insert(&client("a-app"), NOW).await.unwrap());
    assert!(store.clients.set_status(&ClientId::parse("a-app").unwrap(), ClientStatus::Disabled).await.unwrap());
    assert_eq!(store.clients.all().await.unwrap()[0].status, ClientStatus::Disabled);
    assert!(!store.clients.set_status(&ClientId::parse("nobody").unwrap(), ClientStatus::Disabled).await.unwrap());

    store
        .tokens
        .record(&[token(1, "a-app", NOW + 600), token(2, "a-app", NOW - 1), token(3, "b-app", NOW + 600)])
        .await
        .unwrap();
    let revoked = store.tokens.revoke_live_of(&ClientId::parse("a-app").unwrap(), NOW).await.unwrap();
    assert_eq!(revoked, 1, "only its tokens that have not expired");
    assert_eq!(store.tokens.revoked_live(NOW).await.unwrap(), vec![TokenId::new("jti-1".into())]);
}

async fn supported_channels_are_a_set(store: &Store) {
    assert!(store.channels.allow(&scope("WEB")).await.unwrap());
    assert!(!store.channels.allow(&scope("WEB")).await.unwrap());
    assert!(store.channels.allow(&scope("MOBILE")).await.unwrap());
    assert_eq!(store.channels.all().await.unwrap(), vec![scope("MOBILE"), scope("WEB")]);
}

async fn wait_times_are_upserted_and_keep_leading_zeros(store: &Store) {
    store.wait_times.upsert(&[estimate("00001", 3), estimate("12345", 40)]).await.unwrap();
    store.wait_times.upsert(&[estimate("00001", 7)]).await.unwrap();
    let mut stored = store.wait_times.all().await.unwrap();
    stored.sort_by_key(|row| row.estimate.branch);
    assert_eq!(stored, vec![estimate("00001", 7), estimate("12345", 40)]);
}

async fn tokens_are_found_by_opaque_token_and_revoked_once(store: &Store) {
    let tokens: Vec<_> = (0..1200).map(|n| token(n, "a-app", NOW + 600)).collect();
    store.tokens.record(&tokens).await.unwrap();
    let found = store.tokens.find(&OpaqueToken::new("opaque-1100".into())).await.unwrap().unwrap();
    assert_eq!(found.token, tokens[1100]);
    assert_eq!(found.revoked_at, None);
    assert!(store.tokens.revoke(&found.token.token_id, NOW).await.unwrap());
    assert!(!store.tokens.revoke(&found.token.token_id, NOW).await.unwrap(), "revoked once");
    assert_eq!(
        store.tokens.find(&OpaqueToken::new("opaque-1100".into())).await.unwrap().unwrap().revoked_at,
        Some(NOW)
    );
    assert!(store.tokens.find(&OpaqueToken::new("nope".into())).await.unwrap().is_none());
}

async fn a_token_id_cannot_be_recorded_twice(store: &Store) {
    store.tokens.record(&[token(1, "a-app", NOW)]).await.unwrap();
    assert!(store.tokens.record(&[token(5, "a-app", NOW), token(1, "a-app", NOW)]).await.is_err());
    // All or none: the batch with the duplicate left nothing behind.
    assert!(store.tokens.find(&OpaqueToken::new("opaque-5".into())).await.unwrap().is_none());
}

async fn expired_tokens_are_purged_and_live_ones_kept(store: &Store) {
    const HOUR: i64 = TOKEN_PURGE_GRANULARITY_SECONDS;
    // Hours ago (PostgreSQL: in hourly partitions), long ago (outside them), and not yet.
    let expired =
        [token(1, "a-app", NOW - 3 * HOUR), token(2, "a-app", NOW - HOUR - 1), token(3, "a-app", NOW - 400 * HOUR)];
    store.tokens.record(&expired).await.unwrap();
    store.tokens.record(&[token(4, "a-app", NOW + 10), token(5, "a-app", NOW)]).await.unwrap();
    assert_eq!(store.tokens.purge_expired(NOW).await.unwrap(), 3);
    for gone in ["opaque-1", "opaque-2", "opaque-3"] {
        assert!(store.tokens.find(&OpaqueToken::new(gone.into())).await.unwrap().is_none(), "{gone} purged");
    }
    for kept in ["opaque-4", "opaque-5"] {
        assert!(store.tokens.find(&OpaqueToken::new(kept.into())).await.unwrap().is_some(), "{kept} kept");
    }
    assert_eq!(store.tokens.purge_expired(NOW).await.unwrap(), 0, "nothing left to purge");
}

async fn live_token_records_are_listed_with_their_revocation(store: &Store) {
    let tokens = [token(1, "a-app", NOW - 1), token(2, "a-app", NOW + 60), token(3, "b-app", NOW + 30)];
    store.tokens.record(&tokens).await.unwrap();
    store.tokens.revoke(&TokenId::new("jti-2".into()), NOW - 5).await.unwrap();
    let live = store.tokens.live(NOW).await.unwrap();
    let listed: Vec<(String, Option<i64>)> =
        live.iter().map(|record| (record.token.token_id.as_str().to_owned(), record.revoked_at)).collect();
    assert_eq!(listed, [("jti-3".to_owned(), None), ("jti-2".to_owned(), Some(NOW - 5))], "by expiry");
    assert_eq!(live[0].token, tokens[2], "the record as issued");
}

async fn rotation_keeps_one_current_key_and_publishes_recently_retired_ones(store: &Store) {
    let first = Ed25519Keys.generate(NOW - 100).unwrap();
    let second = Ed25519Keys.generate(NOW).unwrap();
    store.keys.schedule(&first, NOW - 100).await.unwrap();
    store.keys.schedule(&second, NOW).await.unwrap();
    let keys = store.keys.published(NOW - 1).await.unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0].kid, second.kid);
    assert_eq!(keys[0].retired_at, None);
    assert_eq!(keys[1].retired_at, Some(NOW));
    assert_eq!(store.keys.published(NOW).await.unwrap().len(), 1, "a key retired before the window is dropped");
}

async fn a_next_key_retires_the_current_one_at_its_activation_and_an_immediate_one_drops_it(store: &Store) {
    let current = Ed25519Keys.generate(NOW - 100).unwrap();
    store.keys.schedule(&current, NOW - 100).await.unwrap();
    let next = SigningKey { activates_at: NOW + 300, ..Ed25519Keys.generate(NOW).unwrap() };
    store.keys.schedule(&next, NOW).await.unwrap();
    let keys = store.keys.published(NOW).await.unwrap();
    let states: Vec<(String, KeyState)> = keys.iter().map(|key| (key.kid.clone(), key.state_at(NOW))).collect();
    assert_eq!(states, [(next.kid.clone(), KeyState::Next), (current.kid.clone(), KeyState::Current)]);
    assert_eq!(keys[1].retired_at, Some(NOW + 300), "the current key signs until the next one does");

    let urgent = Ed25519Keys.generate(NOW + 10).unwrap();
    store.keys.schedule(&urgent, NOW + 10).await.unwrap();
    let keys = store.keys.published(i64::MIN).await.unwrap();
    let kids: Vec<&str> = keys.iter().map(|key| key.kid.as_str()).collect();
    assert_eq!(kids, [urgent.kid.as_str(), current.kid.as_str()], "the waiting key is dropped");
    assert_eq!(keys[1].retired_at, Some(NOW + 10));
    assert!(keys[0].signs_at(NOW + 10));

    // Two delayed rotations that both saw no waiting key (run at once): the second
    // replaces the first's waiting key, and some key signs at every moment.
    let late = Ed25519Keys.generate(NOW + 20).unwrap();
    let first = SigningKey { activates_at: NOW + 320, ..late.clone() };
    store.keys.schedule(&first, NOW + 20).await.unwrap();
    let second = SigningKey { activates_at: NOW + 350, ..Ed25519Keys.generate(NOW + 50).unwrap() };
    store.keys.schedule(&second, NOW + 50).await.unwrap();
    let keys = store.keys.published(i64::MIN).await.unwrap();
    for moment in NOW + 10..NOW + 400 {
        assert_eq!(keys.iter().filter(|key| key.signs_at(moment)).count(), 1, "one key signs at {moment}");
    }
    assert!(!keys.iter().any(|key| key.kid == first.kid), "the first waiting key was replaced");
}

async fn every_write_moves_its_change_counter(store: &Store) {
    let before = store.view.revisions().await.unwrap();
    assert!(store.clients.insert(&client("a-app"), NOW).await.unwrap());
    store.channels.allow(&scope("WEB")).await.unwrap();
    store.wait_times.upsert(&[estimate("00001", 1)]).await.unwrap();
    store.keys.schedule(&Ed25519Keys.generate(NOW).unwrap(), NOW).await.unwrap();
    store.tokens.record(&[token(1, "a-app", NOW + 60)]).await.unwrap();
    store.tokens.revoke(&TokenId::new("jti-1".into()), NOW).await.unwrap();
    let after = store.view.revisions().await.unwrap();
    assert!(after.clients > before.clients);
    assert!(after.access > before.access);
    assert!(after.wait_times > before.wait_times);
    assert!(after.signing_keys > before.signing_keys);
    assert!(after.revocations > before.revocations);
}

async fn the_view_serves_what_the_store_holds_and_follows_its_changes(store: &Store) {
    // The view signs by the system clock: a key that signs from long before it.
    const LONG_AGO: i64 = 1_000_000_000;
    store.keys.schedule(&Ed25519Keys.generate(LONG_AGO).unwrap(), LONG_AGO).await.unwrap();
    assert!(store.clients.insert(&client("a-app"), NOW).await.unwrap());
    store.wait_times.upsert(&[estimate("00001", 3)]).await.unwrap();
    let tokens = Arc::new(JwtTokens::new("iss", "aud", Arc::new(SystemClock)));
    let settings = ViewSettings {
        token_lifetime: Duration::from_secs(1800),
        refresh_interval: Duration::from_secs(1),
        max_staleness: Duration::from_secs(60),
    };
    let view = StoreView::load(store.clone(), Arc::clone(&tokens), Arc::new(SystemClock), settings).await.unwrap();
    assert!(tokens.current_kid().is_some());
    assert!(view.find(&ClientId::parse("a-app").unwrap()).await.unwrap().is_some());
    assert!(!view.is_supported(&scope("WEB")).await.unwrap());

    store.channels.allow(&scope("WEB")).await.unwrap();
    store.wait_times.upsert(&[estimate("00001", 9), estimate("00002", 4)]).await.unwrap();
    let ids = [BranchId::parse("00002").unwrap(), BranchId::parse("00003").unwrap(), BranchId::parse("00001").unwrap()];
    assert_eq!(view.wait_times(&ids).await.unwrap().len(), 1, "unchanged until refreshed");
    view.refresh().await.unwrap();
    assert!(view.is_supported(&scope("WEB")).await.unwrap());
    let minutes: Vec<_> = view.wait_times(&ids).await.unwrap().iter().map(|w| w.wait.minutes()).collect();
    assert_eq!(minutes, vec![4, 9]);

    view.record(token(7, "a-app", NOW + 3_600_000_000)).await.unwrap();
    assert!(store.tokens.find(&OpaqueToken::new("opaque-7".into())).await.unwrap().is_some(), "durable once recorded");
    store.tokens.revoke(&TokenId::new("jti-7".into()), NOW).await.unwrap();
    view.refresh().await.unwrap();
    assert!(view.is_revoked(&TokenId::new("jti-7".into())).await.unwrap());

    store.atms.replace(&brand("Alfa", &["A1", "A2"]), NOW).await.unwrap();
    view.refresh().await.unwrap();
    let catalog = view.catalog().await.unwrap();
    assert_eq!((catalog.len(), catalog.last_updated()), (2, NOW));
}

async fn a_view_that_cannot_reach_its_store_stops_vouching_for_its_data(store: &Store) {
    store.keys.schedule(&Ed25519Keys.generate(NOW).unwrap(), NOW).await.unwrap();
    store.wait_times.upsert(&[estimate("00001", 3)]).await.unwrap();
    let settings = ViewSettings {
        token_lifetime: Duration::from_secs(1800),
        refresh_interval: Duration::from_millis(10),
        max_staleness: Duration::from_millis(50),
    };
    let view = StoreView::load(
        store.clone(),
        Arc::new(JwtTokens::new("iss", "aud", Arc::new(SystemClock))),
        Arc::new(SystemClock),
        settings,
    )
    .await
    .unwrap();
    let branch = [BranchId::parse("00001").unwrap()];
    assert_eq!(view.wait_times(&branch).await.unwrap().len(), 1);

    store.lifecycle.close().await;
    assert!(view.refresh().await.is_err());
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert!(view.wait_times(&branch).await.is_err(), "stale past max_staleness");
    assert!(view.catalog().await.is_err());
}

/// A brand's ATMs in stored form; the first has services, accessibility and coordinates.
fn brand(name: &str, ids: &[&str]) -> Vec<StoredAtm> {
    let atms: Vec<serde_json::Value> = ids
        .iter()
        .map(|id| {
            serde_json::json!({
                "Identification": id,
                "SupportedCurrencies": ["MXN"],
                "Location": {"PostalAddress": {"TownName": "Monterrey", "Country": "MX"}}
            })
        })
        .enumerate()
        .map(|(n, mut atm)| {
            if n == 0 {
                atm["ATMServices"] = serde_json::json!(["CashWithdrawal", "PINChange"]);
                atm["Accessibility"] = serde_json::json!(["WheelchairAccess"]);
                atm["Location"]["PostalAddress"]["GeoLocation"] = serde_json::json!({"GeographicCoordinates":
                    {"Latitude": "25.6866142", "Longitude": "-100.3161126"}});
            }
            atm
        })
        .collect();
    atms.iter().map(|record| domain::testing::stored_atm(name, record)).collect()
}

/// `brand/identification` of each stored ATM.
fn ids_of(set: &adapters::store::AtmSet) -> Vec<String> {
    set.atms.iter().map(|atm| format!("{}/{}", atm.brand, atm.identification)).collect()
}

async fn the_atm_set_is_replaced_whole_and_read_back_in_brand_then_id_order(store: &Store) {
    let empty = store.view.atms().await.unwrap();
    assert!(empty.atms.is_empty());
    let before = store.view.revisions().await.unwrap().atms;

    let (zeta, alfa) = (brand("Zeta", &["Z2", "Z1"]), brand("Alfa", &["A1"]));
    let lower = brand("alfa", &["a1"]);
    store.atms.replace(&[zeta.clone(), lower, alfa.clone()].concat(), NOW).await.unwrap();
    let set = store.view.atms().await.unwrap();
    assert_eq!(set.last_updated, NOW);
    // Byte order (not a language's collation), so every backend pages alike.
    assert_eq!(ids_of(&set), ["Alfa/A1", "Zeta/Z1", "Zeta/Z2", "alfa/a1"]);
    assert_eq!(set.atms[0], alfa[0], "record, bits and coordinates read back as written");
    assert_eq!(set.atms[2], zeta[0]);
    assert!(store.view.revisions().await.unwrap().atms > before);

    store.atms.replace(&brand("Beta", &["B1"]), NOW + 1).await.unwrap();
    let replaced = store.view.atms().await.unwrap();
    assert_eq!(ids_of(&replaced), ["Beta/B1"], "nothing of the old set remains");
    assert_eq!(replaced.last_updated, NOW + 1);
}

async fn an_atm_set_changes_by_its_differences_in_one_step(store: &Store) {
    store.atms.replace(&[brand("Alfa", &["A1", "A2"]), brand("Beta", &["B1"])].concat(), NOW).await.unwrap();
    let before = store.view.revisions().await.unwrap().atms;
    let moved = brand("Alfa", &["A2"]).remove(0);
    let mut changed = brand("Alfa", &["A1", "A9"]);
    changed[0].record = changed[0].record.replace("Monterrey", "Saltillo");
    let upserts = [changed, vec![moved]].concat();
    store.atms.apply(&upserts, &[("Beta".to_owned(), "B1".to_owned())], NOW + 5).await.unwrap();
    let set = store.atms.current().await.unwrap();
    assert_eq!(ids_of(&set), ["Alfa/A1", "Alfa/A2", "Alfa/A9"]);
    assert!(set.atms[0].record.contains("Saltillo"), "a changed record replaced");
    assert_eq!(set.last_updated, NOW + 5);
    assert!(store.view.revisions().await.unwrap().atms > before, "the change is counted");
}

async fn imports_are_counted_by_kind_and_outcome_with_the_last_time(store: &Store) {
    use domain::ports::{ImportKind, ImportOutcome, ImportTally};
    assert_eq!(store.imports.tally().await.unwrap(), vec![], "a new store has counted nothing");
    store.imports.record(ImportKind::Atms, ImportOutcome::Applied, NOW).await.unwrap();
    store.imports.record(ImportKind::Atms, ImportOutcome::Refused, NOW + 1).await.unwrap();
    store.imports.record(ImportKind::Atms, ImportOutcome::Applied, NOW + 2).await.unwrap();
    store.imports.record(ImportKind::WaitTimes, ImportOutcome::Unchanged, NOW + 3).await.unwrap();
    // A host whose clock is behind counts the run, but never moves the last time back.
    store.imports.record(ImportKind::Atms, ImportOutcome::Refused, NOW - 60).await.unwrap();
    let tally = store.imports.tally().await.unwrap();
    let of = |kind, outcome, runs, last_at| ImportTally { kind, outcome, runs, last_at };
    assert_eq!(
        tally,
        vec![
            of(ImportKind::Atms, ImportOutcome::Applied, 2, NOW + 2),
            of(ImportKind::Atms, ImportOutcome::Refused, 2, NOW + 1),
            of(ImportKind::WaitTimes, ImportOutcome::Unchanged, 1, NOW + 3),
        ]
    );
}

async fn a_closed_store_answers_unavailable(store: &Store) {
    store.lifecycle.close().await;
    assert!(store.lifecycle.ping().await.is_err());
    assert!(store.view.revisions().await.is_err());
}

/// A store for one check, and whatever must live as long as it (its folder, its database).
struct Fresh {
    store: Store,
    _keep: Box<dyn std::any::Any + Send>,
}

/// Runs every contract check, each on a fresh store made by `fresh` (`None`: the backend
/// is not reachable here, and `fresh` has said so).
macro_rules! contract_suite {
    ($fresh:expr; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                let fresh: Option<super::Fresh> = $fresh.await;
                let Some(fresh) = fresh else { return };
                super::$check(&fresh.store).await;
            }
        )+
    };
}

/// Every check of the contract, for [`contract_suite`].
macro_rules! every_check {
    ($fresh:expr) => {
        contract_suite!($fresh;
            a_store_tells_which_kinds_of_data_it_holds,
            clients_round_trip_and_cannot_be_registered_twice,
            a_clients_addresses_are_replaced_list_by_list,
            a_clients_status_is_set_and_its_live_tokens_revoked,
            supported_channels_are_a_set,
            wait_times_are_upserted_and_keep_leading_zeros,
            tokens_are_found_by_opaque_token_and_revoked_once,
            a_token_id_cannot_be_recorded_twice,
            expired_tokens_are_purged_and_live_ones_kept,
            live_token_records_are_listed_with_their_revocation,
            rotation_keeps_one_current_key_and_publishes_recently_retired_ones,
            a_next_key_retires_the_current_one_at_its_activation_and_an_immediate_one_drops_it,
            every_write_moves_its_change_counter,
            the_atm_set_is_replaced_whole_and_read_back_in_brand_then_id_order,
            an_atm_set_changes_by_its_differences_in_one_step,
            imports_are_counted_by_kind_and_outcome_with_the_last_time,
            a_closed_store_answers_unavailable,
            a_view_that_cannot_reach_its_store_stops_vouching_for_its_data,
            the_view_serves_what_the_store_holds_and_follows_its_changes,
        );
    };
}

/// Readies a migrated store for tokens expiring around [`NOW`]: the token partitions of
/// a PostgreSQL store begin four hours before it, so the checks write both into
/// partitions and (far from `NOW`) into the default partition.
async fn prepared(store: Store) -> Store {
    store.lifecycle.migrate().await.unwrap();
    store.lifecycle.prepare(NOW - 4 * 3600).await.unwrap();
    store
}

mod sqlite {
    use adapters::sqlite::SqliteStore;

    use super::*;

    /// A migrated store in a file of its own (a file, not `:memory:`, so WAL and
    /// several pooled connections are exercised as in production).
    async fn fresh() -> Option<Fresh> {
        let folder = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/nested/store.db", folder.path().display());
        let store = prepared(Store::of(SqliteStore::connect(&url).await.unwrap())).await;
        Some(Fresh { store, _keep: Box::new(folder) })
    }

    every_check!(fresh());
}

mod postgres {
    use adapters::postgres::PostgresStore;
    use adapters::testing::postgres::TestDatabase;

    use super::*;

    /// A migrated store in a new database of its own on the test server, dropped after
    /// the check.
    async fn fresh() -> Option<Fresh> {
        let database = TestDatabase::create("the store contract").await?;
        let store = prepared(Store::of(PostgresStore::connect(&database.url).await.unwrap())).await;
        Some(Fresh { store, _keep: Box::new(database) })
    }

    every_check!(fresh());
}
