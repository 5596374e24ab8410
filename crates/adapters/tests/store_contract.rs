//! The contract every [`Store`] keeps, run against each adapter.
//!
//! Each check is an async function over `&dyn Store` on a freshly migrated, empty
//! store; every adapter module below runs all of them.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use adapters::jwt::{Ed25519Keys, JwtTokens};
use adapters::store::{AtmSet, Revisions, Store};
use adapters::system::SystemClock;
use adapters::testing::{FreshStore, fresh_store_url};
use adapters::view::{StoreView, ViewSettings};
use domain::atm::AtmService;
use domain::atm_catalog::StoredAtm;
use domain::atm_closure::AtmClosure;
use domain::atm_state::{AtmId, AtmState, AtmStateEvent, Reason, Reported, Services};
use domain::branch::{BranchId, BranchWaitTime, WaitTime, WaitTimeEstimate};
use domain::client::{ClientChanges, ClientId, ClientRegistration, ClientStatus, Origin, RedirectUri};
use domain::dpop::DpopPolicy;
use domain::outage::{OutageDuration, OutageId, PlannedOutage};
use domain::ports::{
    AccessPolicy, AtmDirectory, AtmSetEdit, ClientRegistry, ImportKind, ImportOutcome, KeyGenerator as _,
    ReceivedEvent, StateOutcome, TOKEN_PURGE_GRANULARITY_SECONDS, TokenLedger, WaitTimeStore,
};
use domain::posted::{EventId, EventTime};
use domain::queue::event::{CounterId, QueueEvent, QueueEventKind, TicketId};
use domain::services::imports::{AtmFeed, AtmImport, DataImport, ImportRules};
use domain::store_contents::StoreContents;
use domain::system::{AssertionId, PublicKeySet, SystemChanges, SystemId, SystemRegistration, SystemScopes};
use domain::testing::scope;
use domain::text::Explanation;
use domain::token::{CodeChallenge, IssuedToken, KeyState, OpaqueToken, SessionId, SigningKey, TokenId};

const NOW: i64 = 1_800_000_000;

fn client(id: &str) -> ClientRegistration {
    ClientRegistration {
        client_id: ClientId::parse(id).unwrap(),
        scope: scope("MOBILE"),
        redirect_uris: vec![RedirectUri::parse("https://app.example.mx/cb").unwrap()],
        allowed_origins: Vec::new(),
        status: ClientStatus::Active,
        dpop: DpopPolicy::Optional,
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
    let only_origins = ClientChanges { allowed_origins: Some(origins.clone()), ..ClientChanges::default() };
    let id = ClientId::parse("a-app").unwrap();
    assert!(store.clients.change(&id, &only_origins).await.unwrap());
    let updated = store.clients.all().await.unwrap().remove(0);
    assert_eq!((updated.allowed_origins, updated.redirect_uris), (origins, registered.redirect_uris.clone()));
    let uris = vec![RedirectUri::parse("https://three.example.mx/cb").unwrap()];
    let only_uris = ClientChanges { redirect_uris: Some(uris.clone()), ..ClientChanges::default() };
    assert!(store.clients.change(&id, &only_uris).await.unwrap());
    let updated = store.clients.all().await.unwrap().remove(0);
    assert_eq!((updated.redirect_uris, updated.allowed_origins.len()), (uris.clone(), 2));
    assert_eq!(updated.dpop, DpopPolicy::Optional, "a client registers with DPoP optional by default");
    let only_dpop = ClientChanges { dpop: Some(DpopPolicy::Required), ..ClientChanges::default() };
    assert!(store.clients.change(&id, &only_dpop).await.unwrap());
    let updated = store.clients.all().await.unwrap().remove(0);
    assert_eq!((updated.dpop, updated.redirect_uris, updated.allowed_origins.len()), (DpopPolicy::Required, uris, 2));
    let mut requiring = client("b-app");
    requiring.dpop = DpopPolicy::Required;
    assert!(store.clients.insert(&requiring, NOW).await.unwrap());
    assert_eq!(store.clients.all().await.unwrap()[1].dpop, DpopPolicy::Required, "the policy round-trips");
    assert!(!store.clients.change(&ClientId::parse("nobody").unwrap(), &only_uris).await.unwrap());
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

    // Enabled again (`clients enable`): active, and its revoked tokens stay revoked.
    assert!(store.clients.set_status(&ClientId::parse("a-app").unwrap(), ClientStatus::Active).await.unwrap());
    assert_eq!(store.clients.all().await.unwrap()[0].status, ClientStatus::Active);
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
    store.tokens.record(&[]).await.expect("an empty batch writes nothing");
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

/// MariaDB purges in batches: a purge of more records than a batch (500 there) still
/// purges every expired one, and only those.
async fn a_purge_of_more_records_than_a_batch_purges_every_expired_one(store: &Store) {
    const HOUR: i64 = TOKEN_PURGE_GRANULARITY_SECONDS;
    let expired: Vec<IssuedToken> = (0..1_201).map(|n| token(n, "a-app", NOW - 400 * HOUR - i64::from(n))).collect();
    store.tokens.record(&expired).await.unwrap();
    store.tokens.record(&[token(5_000, "a-app", NOW + 10)]).await.unwrap();
    assert_eq!(store.tokens.purge_expired(NOW).await.unwrap(), 1_201);
    assert!(store.tokens.find(&OpaqueToken::new("opaque-5000".into())).await.unwrap().is_some(), "the live one kept");
    assert!(store.tokens.find(&OpaqueToken::new("opaque-1200".into())).await.unwrap().is_none());
    assert_eq!(store.tokens.purge_expired(NOW).await.unwrap(), 0, "nothing left to purge");
}

/// MariaDB purges client by client and keeps revocations apart (`revoked_tokens`): a
/// purge reaches every client's expired records, and a purged revocation is gone with
/// its record.
async fn a_purge_reaches_every_clients_records_and_their_revocations(store: &Store) {
    const HOUR: i64 = TOKEN_PURGE_GRANULARITY_SECONDS;
    store
        .tokens
        .record(&[
            token(1, "a-app", NOW - 3 * HOUR),
            token(2, "b-app", NOW - 3 * HOUR),
            token(3, "c-app", NOW - 3 * HOUR),
            token(4, "a-app", NOW + 600),
            token(5, "b-app", NOW + 600),
        ])
        .await
        .unwrap();
    let long_ago = NOW - 10 * HOUR;
    for jti in ["jti-3", "jti-4"] {
        assert!(store.tokens.revoke(&TokenId::new(jti.into()), long_ago).await.unwrap());
    }
    let mut revoked = store.tokens.revoked_live(long_ago).await.unwrap();
    revoked.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(revoked, vec![TokenId::new("jti-3".into()), TokenId::new("jti-4".into())]);

    assert_eq!(store.tokens.purge_expired(NOW).await.unwrap(), 3);
    assert_eq!(store.tokens.revoked_live(long_ago).await.unwrap(), vec![TokenId::new("jti-4".into())]);
    for (opaque, kept) in
        [("opaque-1", false), ("opaque-2", false), ("opaque-3", false), ("opaque-4", true), ("opaque-5", true)]
    {
        assert_eq!(store.tokens.find(&OpaqueToken::new(opaque.into())).await.unwrap().is_some(), kept, "{opaque}");
    }
}

/// Opaque tokens are compared byte for byte: a store whose text collation folds case or
/// ignores trailing spaces (MariaDB's defaults) would answer one token's record for
/// another's.
async fn opaque_tokens_that_differ_only_in_case_or_a_trailing_space_are_different_tokens(store: &Store) {
    let variants = ["opaque-Ab", "opaque-ab", "opaque-Ab "];
    let tokens: Vec<IssuedToken> = (0u32..)
        .zip(variants)
        .map(|(n, opaque)| IssuedToken { opaque_token: OpaqueToken::new(opaque.into()), ..token(n, "a-app", NOW + 60) })
        .collect();
    store.tokens.record(&tokens).await.unwrap();
    for (n, opaque) in (0u32..).zip(variants) {
        let found = store.tokens.find(&OpaqueToken::new(opaque.into())).await.unwrap().expect(opaque);
        assert_eq!(found.token.token_id.as_str(), format!("jti-{n}"), "{opaque:?}");
    }
    assert!(store.tokens.find(&OpaqueToken::new("OPAQUE-AB".into())).await.unwrap().is_none());
}

/// The finding (review of issue 31): MariaDB's triggers move the revocations counter
/// for each row, mid-statement, so a client's revocation (holding the counter, waiting
/// for a token row) and one of its tokens' revocations (holding that row, waiting for
/// the counter) deadlocked, and the server ended one as an error. Both now succeed, on
/// every store, and every token ends revoked.
async fn a_clients_revocation_and_its_tokens_revocations_at_once_all_succeed(store: &Store) {
    let client = ClientId::parse("a-app").unwrap();
    for round in 0..4u32 {
        let tokens: Vec<IssuedToken> = (0..300).map(|n| token(round * 1_000 + n, "a-app", NOW + 600)).collect();
        store.tokens.record(&tokens).await.unwrap();
        let singles = async {
            let mut revoked = 0;
            for token in tokens.iter().rev().take(40) {
                revoked += u64::from(store.tokens.revoke(&token.token_id, NOW).await.unwrap());
            }
            revoked
        };
        let (whole, singles) = tokio::join!(store.tokens.revoke_live_of(&client, NOW), singles);
        assert_eq!(whole.unwrap() + singles, 300, "round {round}: each token revoked once");
    }
    assert_eq!(store.tokens.revoked_live(NOW).await.unwrap().len(), 1_200);
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

async fn a_revoked_key_is_withdrawn_at_once_and_its_replacement_takes_its_place_in_the_same_step(store: &Store) {
    let current = Ed25519Keys.generate(NOW - 100).unwrap();
    store.keys.schedule(&current, NOW - 100).await.unwrap();
    let next = SigningKey { activates_at: NOW + 300, ..Ed25519Keys.generate(NOW).unwrap() };
    store.keys.schedule(&next, NOW).await.unwrap();

    // A waiting key, replaced by one waiting for the same moment.
    let instead = SigningKey { activates_at: NOW + 300, ..Ed25519Keys.generate(NOW + 10).unwrap() };
    assert!(store.keys.revoke(&next.kid, NOW + 10, Some(instead.clone())).await.unwrap());
    let published: Vec<String> = store.keys.published(i64::MIN).await.unwrap().into_iter().map(|k| k.kid).collect();
    assert_eq!(published, [instead.kid.clone(), current.kid.clone()]);
    for moment in NOW..NOW + 400 {
        let signing = store.keys.published(i64::MIN).await.unwrap().into_iter().filter(|k| k.signs_at(moment)).count();
        assert_eq!(signing, 1, "one key signs at {moment}");
    }

    // The signing key, replaced at once.
    let urgent = SigningKey { activates_at: NOW + 20, ..Ed25519Keys.generate(NOW + 20).unwrap() };
    assert!(store.keys.revoke(&current.kid, NOW + 20, Some(urgent.clone())).await.unwrap());
    let published = store.keys.published(i64::MIN).await.unwrap();
    assert_eq!(published.iter().map(|k| k.kid.as_str()).collect::<Vec<_>>(), [urgent.kid.as_str()]);
    assert!(published[0].signs_at(NOW + 20), "the replacement signs at once");

    // Revoked keys stay, to be listed; a second revocation, or an unknown key, changes nothing.
    assert!(!store.keys.revoke(&current.kid, NOW + 30, None).await.unwrap());
    assert!(!store.keys.revoke("no-such-key", NOW + 30, None).await.unwrap());
    let all = store.keys.all().await.unwrap();
    let states: Vec<(&str, KeyState)> = all.iter().map(|key| (key.kid.as_str(), key.state_at(NOW + 30))).collect();
    assert!(states.contains(&(next.kid.as_str(), KeyState::Revoked)), "{states:?}");
    assert!(states.contains(&(current.kid.as_str(), KeyState::Revoked)), "{states:?}");
    assert_eq!(all.iter().find(|key| key.kid == current.kid).unwrap().revoked_at, Some(NOW + 20));
    let kids: Vec<&str> = all.iter().map(|key| key.kid.as_str()).collect();
    assert!(!kids.contains(&instead.kid.as_str()), "the waiting replacement was dropped as by `rotate --now`");
    assert_eq!(kids.len(), 3, "no revoked key was deleted: {kids:?}");

    // A later rotation keeps them too.
    store.keys.schedule(&Ed25519Keys.generate(NOW + 40).unwrap(), NOW + 40).await.unwrap();
    assert_eq!(store.keys.all().await.unwrap().len(), 4);
}

/// The topics whose counters differ between `before` and `after`.
fn moved(before: Revisions, after: Revisions) -> Vec<&'static str> {
    let pairs = before.topics().into_iter().zip(after.topics());
    pairs.filter(|((_, old), (_, new))| old != new).map(|((topic, _), _)| topic).collect()
}

/// The change-counter contract ([`Revisions`]): each write of every port that writes moves
/// its topic's counter and no other; writes that belong to no topic move none.
async fn each_write_moves_its_topics_change_counter_and_no_other(store: &Store) {
    let mut last = store.view.revisions().await.unwrap();
    assert_eq!(last, Revisions::default(), "a new store's counters are all 0");
    // Makes the write, then checks which counters it moved.
    macro_rules! moves {
        ([$($topic:literal),*], $write:expr) => {{
            $write.await.unwrap();
            let now = store.view.revisions().await.unwrap();
            let expected: &[&str] = &[$($topic),*];
            assert_eq!(moved(last, now), expected, "{}", stringify!($write));
            last = now;
        }};
    }
    let id = ClientId::parse("a-app").unwrap();
    let origins = ClientChanges { allowed_origins: Some(vec![]), ..ClientChanges::default() };
    moves!(["clients"], store.clients.insert(&client("a-app"), NOW));
    moves!(["clients"], store.clients.set_status(&id, ClientStatus::Disabled));
    moves!(["clients"], store.clients.change(&id, &origins));
    moves!(["access"], store.channels.allow(&scope("WEB")));
    moves!(["wait_times"], store.wait_times.upsert(&[estimate("00001", 1)]));
    moves!(["atms", "atm_changes"], store.atms.replace(&brand("Alfa", &["A1", "A2"]), NOW));
    let edit =
        AtmSetEdit::Apply { upserts: brand("Beta", &["B1"]), removals: vec![("Alfa".to_owned(), "A2".to_owned())] };
    moves!(["atms", "atm_changes"], store.atms.edit(&mut |_| edit.clone(), NOW + 1));
    moves!([], store.atms.edit(&mut |_| AtmSetEdit::Keep, NOW + 2));
    moves!(["atm_closures", "atm_changes"], store.closures.announce(&closure("B1", 2027)));
    moves!(["atm_closures", "atm_changes"], store.closures.announce(&closure("B1", 2028)));
    moves!([], store.closures.announce(&closure("none", 2027)));
    moves!(["atm_closures", "atm_changes"], store.closures.cancel(&AtmId::parse("B1").unwrap(), NOW));
    moves!([], store.closures.cancel(&AtmId::parse("B1").unwrap(), NOW));
    moves!([], store.changes.feed_closures_due(NOW));
    moves!([], store.changes.forget_before(0));
    moves!(["wait_times"], store.wait_times.edit(&mut |_| vec![estimate("00002", 1)]));
    moves!([], store.wait_times.edit(&mut |_| Vec::new()));
    let key = Ed25519Keys.generate(NOW).unwrap();
    moves!(["signing_keys"], store.keys.schedule(&key, NOW));
    moves!(["signing_keys"], store.vault.reseal(&key.kid, &key.private_pkcs8, b"sealed elsewhere"));
    moves!(["signing_keys"], store.keys.revoke(&key.kid, NOW, Some(Ed25519Keys.generate(NOW).unwrap())));
    let tokens = [token(1, "a-app", NOW + 60), token(2, "a-app", NOW + 60), token(3, "a-app", NOW - 3 * 3600)];
    moves!([], store.tokens.record(&tokens));
    moves!(["revocations"], store.tokens.revoke(&TokenId::new("jti-1".into()), NOW));
    moves!(["revocations"], store.tokens.revoke_live_of(&id, NOW));
    moves!([], store.tokens.purge_expired(NOW));
    moves!([], store.imports.record(ImportKind::Atms, ImportOutcome::Applied, NOW));
    moves!([], store.lifecycle.prepare(NOW));
    let system = SystemId::parse("queue.branch-a").unwrap();
    moves!([], store.systems.insert(&system_with("queue.branch-a", 1), NOW));
    moves!([], store.systems.set_status(&system, ClientStatus::Disabled));
    moves!([], store.systems.change(&system, &SystemChanges::default()));
    moves!([], store.systems.use_assertion(&system, &AssertionId::parse("jti-1").unwrap(), NOW));
    moves!([], store.systems.forget_assertions(NOW + 1));
    let event = queue_event("e-1", "00042", NOW_MICROS, issued("A001"));
    moves!(["queue_events"], store.queue_events.append(&system, std::slice::from_ref(&event), micros(NOW_MICROS)));
    moves!([], store.queue_events.append(&system, &[event], micros(NOW_MICROS + 1)));
    moves!([], store.queue_events.forget_before(micros(NOW_MICROS + 1)));
    assert!(store.tokens.find(&OpaqueToken::new("opaque-3".into())).await.unwrap().is_none(), "the purge ran");
    assert_eq!(store.tokens.revoked_live(NOW).await.unwrap().len(), 2, "both revocations ran");
    assert_eq!(moved(last, store.view.revisions().await.unwrap()), Vec::<&str>::new(), "reads move nothing");
}

async fn the_view_serves_what_the_store_holds_and_follows_its_changes(store: &Store) {
    // The view signs by the system clock: a key that signs from long before it.
    const LONG_AGO: i64 = 1_000_000_000;
    store.keys.schedule(&Ed25519Keys.generate(LONG_AGO).unwrap(), LONG_AGO).await.unwrap();
    assert!(store.clients.insert(&client("a-app"), NOW).await.unwrap());
    store.wait_times.upsert(&[estimate("00001", 3)]).await.unwrap();
    let tokens = Arc::new(JwtTokens::new("iss", "aud", Duration::from_secs(1800), Arc::new(SystemClock)));
    let settings = ViewSettings {
        token_lifetime: Duration::from_secs(1800),
        refresh_interval: Duration::from_secs(1),
        max_staleness: Duration::from_secs(60),
        atm_state_fresh_minutes: FRESH,
    };
    let view = StoreView::load(store.clone(), tokens.clone(), Arc::new(SystemClock), settings).await.unwrap();
    assert!(tokens.current_kid().is_some());
    assert!(view.find(&ClientId::parse("a-app").unwrap()).await.unwrap().is_some());
    assert!(!view.is_supported(&scope("WEB")).await.unwrap());

    store.channels.allow(&scope("WEB")).await.unwrap();
    store.wait_times.upsert(&[estimate("00001", 9), estimate("00002", 4)]).await.unwrap();
    let ids = [BranchId::parse("00002").unwrap(), BranchId::parse("00003").unwrap(), BranchId::parse("00001").unwrap()];
    assert_eq!(view.wait_times(&ids).await.unwrap().len(), 1, "unchanged until refreshed");
    view.refresh().await.unwrap();
    assert!(view.is_supported(&scope("WEB")).await.unwrap());
    let served: Vec<_> =
        view.wait_times(&ids).await.unwrap().iter().map(|w| (w.estimate.wait.minutes(), w.estimated_at)).collect();
    assert_eq!(served, vec![(4, NOW), (9, NOW)], "each with when it was estimated");
    let freshness = view.wait_time_freshness(NOW + 1);
    assert_eq!((freshness.stale, freshness.newest), (2, Some(NOW)), "both older than NOW + 1");
    assert_eq!(view.wait_time_freshness(NOW).stale, 0);

    view.record(token(7, "a-app", NOW + 3_600_000_000)).await.unwrap();
    assert!(store.tokens.find(&OpaqueToken::new("opaque-7".into())).await.unwrap().is_some(), "durable once recorded");
    store.tokens.revoke(&TokenId::new("jti-7".into()), NOW).await.unwrap();
    view.refresh().await.unwrap();
    assert!(view.is_revoked(&TokenId::new("jti-7".into())).await.unwrap());

    store.atms.replace(&brand("Alfa", &["A1", "A2"]), NOW).await.unwrap();
    view.refresh().await.unwrap();
    let catalog = view.catalog().await.unwrap();
    assert_eq!((catalog.len(), catalog.last_updated()), (2, NOW));

    // The queue event log is not held, but whoever follows it is told when it moved.
    let log_moved = view.queue_events_moved();
    view.refresh().await.unwrap();
    assert!(!log_moved.has_changed().unwrap(), "nothing appended");
    let system = SystemId::parse("queue.branch-a").unwrap();
    let event = queue_event("e-1", "00042", NOW_MICROS, issued("A001"));
    store.queue_events.append(&system, &[event], micros(NOW_MICROS)).await.unwrap();
    view.refresh().await.unwrap();
    assert!(log_moved.has_changed().unwrap(), "an append is told at the next refresh");
}

async fn a_view_that_cannot_reach_its_store_stops_vouching_for_its_data(store: &Store) {
    store.keys.schedule(&Ed25519Keys.generate(NOW).unwrap(), NOW).await.unwrap();
    store.wait_times.upsert(&[estimate("00001", 3)]).await.unwrap();
    let settings = ViewSettings {
        token_lifetime: Duration::from_secs(1800),
        refresh_interval: Duration::from_millis(10),
        max_staleness: Duration::from_millis(50),
        atm_state_fresh_minutes: FRESH,
    };
    let view = StoreView::load(
        store.clone(),
        Arc::new(JwtTokens::new("iss", "aud", Duration::from_secs(1800), Arc::new(SystemClock))),
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
    let mut found = Vec::new();
    let edit = AtmSetEdit::Apply { upserts, removals: vec![("Beta".to_owned(), "B1".to_owned())] };
    let plan = &mut |set: &AtmSet| {
        found = ids_of(set);
        edit.clone()
    };
    store.atms.edit(plan, NOW + 5).await.unwrap();
    assert_eq!(found, ["Alfa/A1", "Alfa/A2", "Beta/B1"], "the plan is given the set as stored");
    let set = store.atms.current().await.unwrap();
    assert_eq!(ids_of(&set), ["Alfa/A1", "Alfa/A2", "Alfa/A9"]);
    assert!(set.atms[0].record.contains("Saltillo"), "a changed record replaced");
    assert_eq!(set.last_updated, NOW + 5);
    let after = store.view.revisions().await.unwrap().atms;
    assert!(after > before, "the change is counted");

    store.atms.edit(&mut |_| AtmSetEdit::Keep, NOW + 9).await.unwrap();
    let kept = store.atms.current().await.unwrap();
    assert_eq!((ids_of(&kept).len(), kept.last_updated), (3, NOW + 5), "an edit that keeps the set writes nothing");
    assert_eq!(store.view.revisions().await.unwrap().atms, after);
}

fn closure(atm: &str, year: i32) -> AtmClosure {
    AtmClosure {
        atm: AtmId::parse(atm).unwrap(),
        closes_on: time::Date::from_calendar_date(year, time::Month::March, 1).unwrap(),
        explanation: Explanation::parse("The shop it stands in closes").unwrap(),
        short_notice: (year < 2027).then(|| Explanation::parse("Fire").unwrap()),
        announced_at: NOW,
    }
}

fn closed_atms(set: &AtmSet) -> Vec<(String, i32)> {
    set.closures.iter().map(|closure| (closure.atm.to_string(), closure.closes_on.year())).collect()
}

async fn closures_are_of_atms_of_the_set_read_with_it_and_forgotten_with_their_atm(store: &Store) {
    store.atms.replace(&[brand("Alfa", &["A1", "A2"]), brand("Beta", &["B1", "A2"])].concat(), NOW).await.unwrap();
    assert!(!store.closures.announce(&closure("ZZ", 2027)).await.unwrap(), "no ATM of the set has it");
    assert!(store.closures.announce(&closure("B1", 2027)).await.unwrap());
    assert!(store.closures.announce(&closure("A2", 2026)).await.unwrap());
    assert!(store.closures.announce(&closure("A1", 2027)).await.unwrap());
    assert!(store.closures.announce(&closure("A1", 2028)).await.unwrap(), "announced again: replaced");
    let set = store.atms.current().await.unwrap();
    assert_eq!(closed_atms(&set), [("A1".into(), 2028), ("A2".into(), 2026), ("B1".into(), 2027)]);
    assert_eq!(set.closures[1], closure("A2", 2026), "read back as written, the short notice's reason too");
    assert_eq!(set.last_updated, NOW, "a closure does not date the set");

    assert!(store.closures.cancel(&AtmId::parse("B1").unwrap(), NOW).await.unwrap());
    assert!(!store.closures.cancel(&AtmId::parse("B1").unwrap(), NOW).await.unwrap(), "none left to cancel");
    // Alfa's A2 goes, Beta's stays: its closure stays. A1 goes: its closure with it.
    let removals = vec![("Alfa".to_owned(), "A1".to_owned()), ("Alfa".to_owned(), "A2".to_owned())];
    let edit = AtmSetEdit::Apply { upserts: Vec::new(), removals };
    store.atms.edit(&mut |_| edit.clone(), NOW + 1).await.unwrap();
    assert_eq!(closed_atms(&store.view.atms().await.unwrap()), [("A2".into(), 2026)]);
}

/// `(number, change, brand/ATM)` of each change numbered above `after`.
async fn feed_after(store: &Store, after: i64) -> Vec<(i64, &'static str, String)> {
    let log = store.changes.since(after, 1_000).await.unwrap();
    (log.changes.iter())
        .map(|logged| {
            let change = &logged.change;
            (logged.seq, change.kind.name(), format!("{}/{}", change.brand.as_deref().unwrap_or("*"), change.atm))
        })
        .collect()
}

async fn the_change_feed_numbers_every_change_of_the_set_states_and_closures_in_order(store: &Store) {
    let before = store.changes.since(0, 0).await.unwrap().head;
    store.atms.replace(&brand("Alfa", &["A1", "A2"]), NOW).await.unwrap();
    let start = store.changes.since(0, 10).await.unwrap();
    assert!(!start.store.is_empty());
    assert_eq!(
        (start.floor, start.head, start.changes.len()),
        (before + 1, before + 1, 0),
        "a whole new set: every cursor starts again, one at the head too"
    );
    assert_eq!(store.atms.current().await.unwrap().feed_head, start.head, "the set is read with the feed's head");
    let h = start.head;

    let mut changed = brand("Alfa", &["A1", "A3"]);
    changed[0].record = changed[0].record.replace("Monterrey", "Saltillo");
    let edit = AtmSetEdit::Apply { upserts: changed, removals: vec![("Alfa".to_owned(), "A2".to_owned())] };
    store.atms.edit(&mut |_| edit.clone(), NOW + 1).await.unwrap();
    let system = system_id("atm.monitoring");
    let event = state_event("s-1", "A3", NOW_MICROS, Reported::OutOfService, 0);
    store.atm_states.apply(&system, std::slice::from_ref(&event), micros(NOW_MICROS), FRESH).await.unwrap();
    store.atm_states.apply(&system, &[event], micros(NOW_MICROS), FRESH).await.unwrap();
    let mut closing = closure("A3", 2027);
    closing.closes_on = time::macros::date!(2027 - 01 - 20);
    assert!(store.closures.announce(&closing).await.unwrap());
    assert_eq!(store.changes.feed_closures_due(NOW).await.unwrap(), 0, "not yet");
    let at_date = domain::atm_closure::day_start(closing.closes_on);
    assert_eq!(store.changes.feed_closures_due(at_date).await.unwrap(), 1);
    assert_eq!(store.changes.feed_closures_due(at_date + 60).await.unwrap(), 0, "once");
    assert!(store.closures.cancel(&AtmId::parse("A3").unwrap(), at_date + 120).await.unwrap());
    assert_eq!(
        feed_after(store, h).await,
        [
            (h + 1, "upserted", "Alfa/A1".into()),
            (h + 2, "upserted", "Alfa/A3".into()),
            (h + 3, "removed", "Alfa/A2".into()),
            (h + 4, "state", "*/A3".into()),
            (h + 5, "state", "*/A3".into()),
            (h + 6, "removed", "Alfa/A3".into()),
            (h + 7, "upserted", "Alfa/A3".into()),
            (h + 8, "state", "*/A3".into()),
        ],
        "a duplicate event changes nothing; a cancelled closure reopens its ATM"
    );
    let log = store.changes.since(h + 3, 2).await.unwrap();
    let states: Vec<serde_json::Value> =
        log.changes.iter().map(|c| serde_json::from_str(c.change.body.as_deref().unwrap()).unwrap()).collect();
    assert_eq!(
        (states[0]["state"].as_str(), states[0]["reason"].as_str()),
        (Some("OutOfService"), Some("Safe jammed: engineer on the way"))
    );
    assert_eq!(states[1]["closure"]["closesOn"], "2027-01-20");
    assert_eq!(log.changes[0].change.at, micros(NOW_MICROS), "a state change is dated by its event");
    // A closure whose date came, cancelled before its removal was fed: reopened all the
    // same (a snapshot since its date left it out).
    let mut past = closure("A1", 2027);
    past.closes_on = time::macros::date!(2027 - 01 - 01);
    assert!(store.closures.announce(&past).await.unwrap());
    assert!(store.closures.cancel(&AtmId::parse("A1").unwrap(), at_date).await.unwrap());
    let reopened: Vec<(&str, String)> =
        feed_after(store, h + 8).await.into_iter().map(|(_, kind, atm)| (kind, atm)).collect();
    assert_eq!(reopened, [("state", "*/A1".into()), ("upserted", "Alfa/A1".into()), ("state", "*/A1".into())]);
    let upserted = &store.changes.since(h, 1).await.unwrap().changes[0].change;
    assert!(upserted.body.as_deref().unwrap().contains("Saltillo"), "an upsert carries the record as stored");
    assert_eq!(upserted.at, micros(NOW_MICROS + 1_000_000));
}

async fn forgotten_changes_raise_the_floor_and_later_ones_stay(store: &Store) {
    store.atms.replace(&brand("Alfa", &["A1"]), NOW).await.unwrap();
    let floor = store.changes.since(0, 0).await.unwrap().floor;
    for (n, written) in [(2, NOW + 10), (3, NOW + 20)] {
        let edit = AtmSetEdit::Apply { upserts: brand("Alfa", &[&format!("A{n}")]), removals: vec![] };
        store.atms.edit(&mut |_| edit.clone(), written).await.unwrap();
    }
    assert_eq!(store.changes.forget_before(NOW + 10).await.unwrap(), 0, "none written before");
    assert_eq!(store.changes.forget_before(NOW + 11).await.unwrap(), 1);
    let log = store.changes.since(0, 10).await.unwrap();
    assert_eq!(log.floor, floor + 1, "a cursor below it is too old");
    assert_eq!(log.changes.iter().map(|c| c.seq).collect::<Vec<_>>(), [floor + 2]);
}

/// The guarantee the feed rests on: a reader that read up to `n` never finds a change
/// numbered below `n` later. Imports, state applies and closures write at once while a
/// reader follows the log; it must read every number from its start to the head.
async fn a_reader_following_the_feed_while_writers_commit_at_once_skips_no_change(store: &Store) {
    let ids: Vec<String> = (0..20).map(|n| format!("A{n:02}")).collect();
    store.atms.replace(&brand("Alfa", &ids.iter().map(String::as_str).collect::<Vec<_>>()), NOW).await.unwrap();
    let start = store.changes.since(0, 0).await.unwrap().head;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (changes, done) = (Arc::clone(&store.changes), Arc::clone(&done));
        tokio::spawn(async move {
            let (mut seen, mut last) = (Vec::new(), start);
            loop {
                let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                let log = changes.since(last, 1_000).await.unwrap();
                for logged in &log.changes {
                    seen.push(logged.seq);
                    last = logged.seq;
                }
                if finished && log.changes.is_empty() {
                    return (seen, log.head);
                }
            }
        })
    };
    let mut writers = tokio::task::JoinSet::new();
    let system = system_id("atm.monitoring");
    for round in 0..10i64 {
        let (states, system) = (Arc::clone(&store.atm_states), system.clone());
        writers.spawn(async move {
            let events: Vec<AtmStateEvent> = (0..5)
                .map(|n| {
                    state_event(
                        &format!("w{round}-{n}"),
                        &format!("A{n:02}"),
                        NOW_MICROS + round,
                        Reported::InService,
                        0,
                    )
                })
                .collect();
            states.apply(&system, &events, micros(NOW_MICROS + round), FRESH).await.map(drop)
        });
        let atms = Arc::clone(&store.atms);
        writers.spawn(async move {
            let mut record = brand("Alfa", &["A10"]);
            record[0].record = record[0].record.replace("Monterrey", &format!("Round {round}"));
            let edit = AtmSetEdit::Apply { upserts: record, removals: vec![] };
            atms.edit(&mut |_| edit.clone(), NOW + round).await
        });
        let closures = Arc::clone(&store.closures);
        writers.spawn(async move {
            let mut closing = closure("A11", 2028);
            closing.announced_at = NOW + round;
            closures.announce(&closing).await.map(drop)
        });
    }
    for written in writers.join_all().await {
        written.unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let (seen, head) = reader.await.unwrap();
    assert_eq!(seen, (start + 1..=head).collect::<Vec<_>>(), "every change once, in order, none passed by");
    // Each import and closure wrote one change; the state applies up to five each (an
    // event older than one another round committed first changes nothing).
    assert!((10 + 10 + 5..=10 + 10 + 50).contains(&(head - start)), "{}", head - start);
}

/// The finding: two `atms import`s at once each compared its feed with the same stored
/// set, and both applied their differences: 20,000 ATMs, file A removing its first 9 %
/// and file B the next 9 % (each alone within the 10 % shrink guard), left 16,400, a
/// set neither file holds. Imports now apply one after the other, each compared with
/// and judged against the set as the other left it. Run a few rounds, each order first.
async fn two_atm_imports_at_once_apply_one_after_the_other(store: &Store) {
    let ids: Vec<String> = (0..400).map(|n| format!("A{n:04}")).collect();
    let set = brand("Alfa", &ids.iter().map(String::as_str).collect::<Vec<_>>());
    let without = |cut: std::ops::Range<usize>| AtmFeed {
        atms: set.iter().enumerate().filter(|(n, _)| !cut.contains(n)).map(|(_, atm)| atm.clone()).collect(),
        published: None,
    };
    let feeds = [without(0..36), without(36..72)];
    for round in 0..6 {
        store.atms.replace(&set, NOW).await.unwrap();
        let (first, second) = if round % 2 == 0 { (0, 1) } else { (1, 0) };
        let imports = [&feeds[first], &feeds[second]].map(|feed| {
            let (import, feed) = (importing(store), feed.clone());
            tokio::spawn(async move { import.atms(&feed, ImportRules::default()).await })
        });
        let mut outcomes = Vec::new();
        for import in imports {
            match import.await.unwrap() {
                Ok(AtmImport::Applied(changes)) => {
                    outcomes.push((changes.current, changes.removed.len(), changes.added.len()))
                }
                other => panic!("round {round}: each import applies, the second to the first's set: {other:?}"),
            }
        }
        outcomes.sort_unstable();
        // The first found the 400 and removed its 36; the second found the first's 364,
        // removed its own 36 and put back the first's.
        assert_eq!(outcomes, [(364, 36, 36), (400, 36, 0)], "round {round}: what each import found");
        let stored: Vec<String> = ids_of(&store.atms.current().await.unwrap());
        let is_feed =
            |feed: &AtmFeed| feed.atms.iter().map(|a| format!("Alfa/{}", a.identification)).eq(stored.iter().cloned());
        assert!(
            is_feed(&feeds[0]) || is_feed(&feeds[1]),
            "round {round}: {} ATMs stored, a set neither feed holds",
            stored.len()
        );
    }
}

/// The same finding for wait times: two imports at once were compared with the same
/// stored rows and each wrote only what differed from them, so their writes mixed into
/// values no order of the two files gives. File A dates every branch at 7 minutes; file
/// B leaves the first half at their stored 5 and puts the rest at 9.
async fn two_wait_time_imports_at_once_apply_one_after_the_other(store: &Store) {
    let branches: Vec<String> = (1..=200).map(|n| format!("{n:05}")).collect();
    let rows = |minutes: &dyn Fn(usize) -> u32| -> Vec<WaitTimeEstimate> {
        branches.iter().enumerate().map(|(n, branch)| estimate(branch, minutes(n))).collect()
    };
    let stored = rows(&|_| 5);
    let a = rows(&|_| 7);
    let b = rows(&|n| if n < 100 { 5 } else { 9 });
    for round in 0..6 {
        store.wait_times.upsert(&stored).await.unwrap();
        let order = if round % 2 == 0 { [&a, &b] } else { [&b, &a] };
        let imports = order.map(|file| {
            let (import, file) = (importing(store), file.clone());
            tokio::spawn(async move { import.wait_times(&file, false).await })
        });
        for import in imports {
            assert!(import.await.unwrap().is_ok(), "round {round}");
        }
        let mut now = store.wait_times.all().await.unwrap();
        now.sort_by_key(|row| row.estimate.branch);
        assert!(now == a || now == b, "round {round}: the store holds what neither file followed by the other gives");
    }
}

/// The lock itself, without the chance of timing: the first edit's plan holds on until a
/// second edit has been started, then a further 200 ms; the second must read what the
/// first wrote. A store that let the second read before the first committed would show
/// it the set (or the rows) as before.
async fn an_edit_started_while_another_plans_reads_what_the_other_wrote(store: &Store) {
    store.atms.replace(&brand("Alfa", &["A1", "A2", "A3"]), NOW).await.unwrap();
    store.wait_times.upsert(&[estimate("00001", 5), estimate("00002", 5)]).await.unwrap();

    let (started, first) = {
        let atms = Arc::clone(&store.atms);
        in_turn(move |planning, second_started| async move {
            let mut planning = Some(planning);
            let plan = &mut move |_: &AtmSet| {
                hold_until_started(planning.take(), &second_started);
                AtmSetEdit::Apply { upserts: Vec::new(), removals: vec![("Alfa".to_owned(), "A1".to_owned())] }
            };
            atms.edit(plan, NOW + 1).await
        })
        .await
    };
    let mut seen = Vec::new();
    started.send(()).unwrap();
    store
        .atms
        .edit(
            &mut |set| {
                seen = ids_of(set);
                AtmSetEdit::Keep
            },
            NOW + 2,
        )
        .await
        .unwrap();
    first.await.unwrap().unwrap();
    assert_eq!(seen, ["Alfa/A2", "Alfa/A3"], "the second edit read the set as the first left it");

    let (started, first) = {
        let wait_times = Arc::clone(&store.wait_times);
        in_turn(move |planning, second_started| async move {
            let mut planning = Some(planning);
            let plan = &mut move |_: &Vec<WaitTimeEstimate>| {
                hold_until_started(planning.take(), &second_started);
                vec![estimate("00001", 9)]
            };
            wait_times.edit(plan).await
        })
        .await
    };
    let mut seen = Vec::new();
    started.send(()).unwrap();
    store
        .wait_times
        .edit(&mut |rows| {
            seen = rows.iter().map(|row| row.estimate.wait.minutes()).collect();
            Vec::new()
        })
        .await
        .unwrap();
    first.await.unwrap().unwrap();
    seen.sort_unstable();
    assert_eq!(seen, [5, 9], "the second edit read the rows as the first left them");
}

/// Spawns the first of two edits, `edit(planning, second_started)`, and returns once its
/// plan is running (it says so on `planning`), with the sender that tells it a second
/// edit has been started, and the first edit's task.
async fn in_turn<F, Edit>(
    edit: F,
) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<Result<(), domain::ports::StoreUnavailable>>)
where
    F: FnOnce(tokio::sync::oneshot::Sender<()>, std::sync::mpsc::Receiver<()>) -> Edit,
    Edit: Future<Output = Result<(), domain::ports::StoreUnavailable>> + Send + 'static,
{
    let (planning, planned) = tokio::sync::oneshot::channel();
    let (started, second_started) = std::sync::mpsc::channel();
    let first = tokio::spawn(edit(planning, second_started));
    planned.await.unwrap();
    (started, first)
}

/// In a plan: says it is planning, then blocks its thread (plans are synchronous, and a
/// store calls them holding its lock) until a second edit has been started, and 200 ms
/// more for that edit to reach the store's lock.
fn hold_until_started(
    planning: Option<tokio::sync::oneshot::Sender<()>>,
    second_started: &std::sync::mpsc::Receiver<()>,
) {
    if let Some(planning) = planning {
        planning.send(()).unwrap();
    }
    second_started.recv_timeout(Duration::from_secs(10)).unwrap();
    std::thread::sleep(Duration::from_millis(200));
}

/// The operators' imports over `store`'s ports, as `atms import` and `waittimes import` run them.
fn importing(store: &Store) -> DataImport {
    DataImport::new(
        Arc::clone(&store.wait_times),
        Arc::clone(&store.atms),
        Arc::clone(&store.imports),
        Arc::new(SystemClock),
    )
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
    _keep: FreshStore,
}

/// A migrated store of the backend registered as `name`, new for one check; `None` when
/// that backend cannot run here (it has said why).
async fn fresh(name: &str) -> Option<Fresh> {
    let kept = fresh_store_url(name).await?;
    let store = prepared(Store::open(&kept.url).await.unwrap()).await;
    Some(Fresh { store, _keep: kept })
}

/// Readies a migrated store for tokens expiring around [`NOW`]: the token partitions of
/// a PostgreSQL store begin four hours before it, so the checks write both into
/// partitions and (far from `NOW`) into the default partition.
async fn prepared(store: Store) -> Store {
    store.lifecycle.migrate().await.unwrap();
    store.lifecycle.prepare(NOW - 4 * 3600).await.unwrap();
    store
}

/// Runs every contract check on each backend listed, one module of tests per backend,
/// each check on a fresh store; and checks that every registered backend is listed.
fn outage(id: &str, starts_at: i64, seconds: i64, partial: bool, explanation: &str) -> PlannedOutage {
    PlannedOutage {
        id: OutageId::parse(id).unwrap(),
        starts_at,
        duration: OutageDuration::from_seconds(seconds).unwrap(),
        partial,
        explanation: Explanation::parse(explanation).unwrap(),
    }
}

async fn planned_outages_round_trip_soonest_first_and_go_when_cancelled(store: &Store) {
    assert!(store.outages.not_over(NOW).await.unwrap().is_empty(), "a new store plans nothing");
    let revisions = store.view.revisions().await.unwrap();
    let later = outage("b2", NOW + 7 * 86_400, 7_200, false, "Database upgrade: no service");
    let sooner = outage("a1", NOW + 3_600, 1_800, true, "Tokens cannot be issued; \u{00e1}rbol caf\u{00e9} \u{1f3e6}");
    let same_start = outage("a0", NOW + 7 * 86_400, 60, false, "Network change");
    for planned in [&later, &sooner, &same_start] {
        store.outages.schedule(planned, NOW).await.unwrap();
    }
    assert_eq!(
        store.outages.not_over(NOW).await.unwrap(),
        vec![sooner.clone(), same_start.clone(), later.clone()],
        "soonest first, then by id, each as it was scheduled (partial, text, duration)"
    );
    assert!(store.outages.cancel(&OutageId::parse("a0").unwrap()).await.unwrap());
    assert!(!store.outages.cancel(&OutageId::parse("a0").unwrap()).await.unwrap(), "cancelled once");
    assert!(!store.outages.cancel(&OutageId::parse("unknown").unwrap()).await.unwrap());
    assert_eq!(store.outages.not_over(NOW).await.unwrap(), vec![sooner, later]);
    assert_eq!(store.view.revisions().await.unwrap(), revisions, "planned outages are in no topic");
}

async fn planned_outages_that_are_over_are_not_listed(store: &Store) {
    let over = outage("over", NOW - 7_200, 3_600, false, "Last night's upgrade");
    let ending_now = outage("ends-now", NOW - 3_600, 3_600, false, "Ends this second");
    let under_way = outage("under-way", NOW - 60, 3_600, false, "Upgrade under way");
    for planned in [&over, &ending_now, &under_way] {
        store.outages.schedule(planned, NOW - 86_400).await.unwrap();
    }
    assert_eq!(store.outages.not_over(NOW).await.unwrap(), vec![under_way.clone()], "over at its end");
    assert_eq!(store.outages.not_over(NOW - 3_601).await.unwrap().len(), 3, "all three before the first ended");
}

async fn an_outage_id_is_stored_once(store: &Store) {
    let first = outage("same", NOW + 60, 60, false, "First");
    store.outages.schedule(&first, NOW).await.unwrap();
    assert!(store.outages.schedule(&outage("same", NOW + 600, 60, true, "Second"), NOW).await.is_err());
    assert_eq!(store.outages.not_over(NOW).await.unwrap(), vec![first], "the first stays as it was");
}

/// A system registered with `keys` keys (a JWKS as the reader of key files keeps it).
fn system_with(id: &str, keys: usize) -> SystemRegistration {
    let jwk = r#"{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    SystemRegistration {
        id: SystemId::parse(id).unwrap(),
        keys: PublicKeySet::checked(format!(r#"{{"keys":[{}]}}"#, vec![jwk; keys].join(",")), keys),
        scopes: SystemScopes::parse("queue:write").unwrap(),
        status: ClientStatus::Active,
    }
}

fn system(id: &str) -> SystemRegistration {
    system_with(id, 1)
}

fn system_id(id: &str) -> SystemId {
    SystemId::parse(id).unwrap()
}

fn jti(raw: &str) -> AssertionId {
    AssertionId::parse(raw).unwrap()
}

async fn systems_are_listed_by_id_found_one_by_one_and_cannot_be_registered_twice(store: &Store) {
    let revisions = store.view.revisions().await.unwrap();
    assert!(store.systems.all().await.unwrap().is_empty(), "a new store knows no system");
    assert!(store.systems.insert(&system("queue.branch-b"), NOW).await.unwrap());
    let two_keys = system_with("queue.branch-a", 2);
    assert!(store.systems.insert(&two_keys, NOW).await.unwrap());
    assert!(!store.systems.insert(&system("queue.branch-a"), NOW).await.unwrap(), "an id is registered once");
    assert_eq!(
        store.systems.all().await.unwrap(),
        vec![two_keys.clone(), system("queue.branch-b")],
        "by id, each as registered first (its JWKS, key count, scopes and status)"
    );
    assert_eq!(store.systems.find(&system_id("queue.branch-a")).await.unwrap(), Some(two_keys));
    assert_eq!(store.systems.find(&system_id("queue.branch-c")).await.unwrap(), None);
    assert_eq!(store.systems.find(&system_id("QUEUE.BRANCH-B")).await.unwrap(), None, "ids differ by case");
    assert_eq!(store.view.revisions().await.unwrap(), revisions, "systems are in no topic");
}

async fn a_systems_status_is_set_and_an_unknown_system_is_told_apart(store: &Store) {
    let id = system_id("queue.branch-a");
    assert!(store.systems.insert(&system("queue.branch-a"), NOW).await.unwrap());
    assert!(store.systems.set_status(&id, ClientStatus::Disabled).await.unwrap());
    assert_eq!(store.systems.find(&id).await.unwrap().unwrap().status, ClientStatus::Disabled);
    assert_eq!(store.systems.all().await.unwrap()[0].status, ClientStatus::Disabled);
    assert!(store.systems.set_status(&id, ClientStatus::Disabled).await.unwrap(), "set again: still known");
    assert!(store.systems.set_status(&id, ClientStatus::Active).await.unwrap());
    assert_eq!(store.systems.find(&id).await.unwrap().unwrap().status, ClientStatus::Active);
    assert!(!store.systems.set_status(&system_id("nobody"), ClientStatus::Disabled).await.unwrap());
    assert_eq!(store.systems.all().await.unwrap().len(), 1, "an unknown id registers nothing");
}

async fn a_systems_keys_and_scopes_are_changed_each_without_the_other(store: &Store) {
    let id = system_id("queue.branch-a");
    let mut registered = system("queue.branch-a");
    registered.status = ClientStatus::Disabled;
    assert!(store.systems.insert(&registered, NOW).await.unwrap());
    let rotated = system_with("queue.branch-a", 3).keys;
    let only_keys = SystemChanges { keys: Some(rotated.clone()), ..SystemChanges::default() };
    assert!(store.systems.change(&id, &only_keys).await.unwrap());
    let changed = store.systems.find(&id).await.unwrap().unwrap();
    assert_eq!((changed.keys.json(), changed.keys.len()), (rotated.json(), 3), "the document and its count");
    assert_eq!((&changed.scopes, changed.status), (&registered.scopes, ClientStatus::Disabled), "the rest stays");
    let only_scopes = SystemChanges { scopes: Some(SystemScopes::parse("queue:write").unwrap()), keys: None };
    assert!(store.systems.change(&id, &only_scopes).await.unwrap());
    assert_eq!(store.systems.find(&id).await.unwrap().unwrap().keys, rotated, "the keys stay");
    assert!(store.systems.change(&id, &SystemChanges::default()).await.unwrap(), "nothing to change: still known");
    assert_eq!(store.systems.find(&id).await.unwrap().unwrap(), SystemRegistration { keys: rotated, ..registered });
    assert!(!store.systems.change(&system_id("nobody"), &only_keys).await.unwrap());
}

async fn an_assertion_is_accepted_once_per_system(store: &Store) {
    let (a, b) = (system_id("queue.branch-a"), system_id("queue.branch-b"));
    assert!(store.systems.use_assertion(&a, &jti("6f1c-2d"), NOW + 60).await.unwrap(), "first use");
    assert!(!store.systems.use_assertion(&a, &jti("6f1c-2d"), NOW + 60).await.unwrap(), "replayed");
    assert!(!store.systems.use_assertion(&a, &jti("6f1c-2d"), NOW + 600).await.unwrap(), "replayed, other expiry");
    assert!(store.systems.use_assertion(&b, &jti("6f1c-2d"), NOW + 60).await.unwrap(), "another system's own");
    assert!(store.systems.use_assertion(&a, &jti("6F1C-2D"), NOW + 60).await.unwrap(), "jtis differ by case");
    let longest = "j".repeat(AssertionId::LONGEST);
    assert!(store.systems.use_assertion(&a, &jti(&longest), NOW + 60).await.unwrap());
    assert!(!store.systems.use_assertion(&a, &jti(&longest), NOW + 60).await.unwrap(), "the longest jti whole");
}

async fn uses_of_one_assertion_at_once_are_accepted_exactly_once(store: &Store) {
    let system = system_id("queue.branch-a");
    for round in 0..10 {
        let mut uses = tokio::task::JoinSet::new();
        for _ in 0..6 {
            let (systems, system) = (Arc::clone(&store.systems), system.clone());
            let jti = jti(&format!("replayed-{round}"));
            uses.spawn(async move { systems.use_assertion(&system, &jti, NOW + 60).await });
        }
        let accepted = uses.join_all().await.into_iter().map(Result::unwrap).filter(|&first| first).count();
        assert_eq!(accepted, 1, "round {round}: one use accepted, every other refused");
    }
}

async fn forgetting_assertions_drops_only_the_expired_ones(store: &Store) {
    let system = system_id("queue.branch-a");
    for (raw, expires_at) in [("expired", NOW - 1), ("expires-now", NOW), ("later", NOW + 1)] {
        assert!(store.systems.use_assertion(&system, &jti(raw), expires_at).await.unwrap());
    }
    assert_eq!(store.systems.forget_assertions(NOW).await.unwrap(), 1);
    assert!(!store.systems.use_assertion(&system, &jti("expires-now"), NOW).await.unwrap(), "kept until it expired");
    assert!(!store.systems.use_assertion(&system, &jti("later"), NOW + 1).await.unwrap(), "kept");
    assert!(store.systems.use_assertion(&system, &jti("expired"), NOW - 1).await.unwrap(), "forgotten");
    assert_eq!(store.systems.forget_assertions(NOW - 1).await.unwrap(), 0, "nothing expired before then");
}

/// [`NOW`] in microseconds, as queue events are dated.
const NOW_MICROS: i64 = NOW * 1_000_000;

fn micros(at: i64) -> EventTime {
    EventTime::from_unix_micros(at)
}

fn queue_event(id: &str, branch: &str, at: i64, kind: QueueEventKind) -> QueueEvent {
    QueueEvent { id: EventId::parse(id).unwrap(), branch: BranchId::parse(branch).unwrap(), at: micros(at), kind }
}

fn issued(ticket: &str) -> QueueEventKind {
    QueueEventKind::TicketIssued { ticket: TicketId::parse(ticket).unwrap() }
}

fn called(ticket: &str, counter: &str) -> QueueEventKind {
    QueueEventKind::TicketCalled {
        ticket: TicketId::parse(ticket).unwrap(),
        counter: CounterId::parse(counter).unwrap(),
    }
}

fn opened(counter: &str) -> QueueEventKind {
    QueueEventKind::CounterOpened { counter: CounterId::parse(counter).unwrap() }
}

fn closed(counter: &str) -> QueueEventKind {
    QueueEventKind::CounterClosed { counter: CounterId::parse(counter).unwrap() }
}

fn ids(events: &[QueueEvent]) -> Vec<&str> {
    events.iter().map(|event| event.id.as_str()).collect()
}

/// Every event stored, by receipt.
async fn every_event(store: &Store) -> Vec<ReceivedEvent> {
    store.queue_events.received_since(micros(i64::MIN)).await.unwrap()
}

async fn queue_events_are_appended_once_and_a_resent_id_changes_nothing(store: &Store) {
    let revisions = store.view.revisions().await.unwrap();
    let (posting, other) = (system_id("queue.branch-a"), system_id("queue.branch-b"));
    // Every kind, with its ticket and counter, the first and last branch, microseconds.
    let first = vec![
        queue_event("e-1", "00000", NOW_MICROS + 1, opened("C 1")),
        queue_event("e-2", "99999", NOW_MICROS + 123_457, issued("A042")),
        queue_event("e-3", "00042", NOW_MICROS + 2, called("A042", "C 1")),
        queue_event(
            "e-4",
            "00042",
            NOW_MICROS + 3,
            QueueEventKind::ServiceEnded { ticket: TicketId::parse("A042").unwrap() },
        ),
        queue_event(
            "e-5",
            "00042",
            NOW_MICROS + 4,
            QueueEventKind::TicketCancelled { ticket: TicketId::parse("A~43").unwrap() },
        ),
        queue_event("e-6", "00042", NOW_MICROS + 5, closed("C 1")),
    ];
    let received = micros(NOW_MICROS + 10);
    assert_eq!(store.queue_events.append(&posting, &first, received).await.unwrap(), vec![true; 6]);
    let resent = queue_event("e-2", "00001", NOW_MICROS - 1, closed("other"));
    let later = micros(NOW_MICROS + 20);
    let second = [resent, queue_event("e-7", "00042", NOW_MICROS + 6, issued("A044"))];
    assert_eq!(store.queue_events.append(&other, &second, later).await.unwrap(), vec![false, true]);
    let mut expected: Vec<ReceivedEvent> = first
        .iter()
        .map(|event| ReceivedEvent { event: event.clone(), system: posting.clone(), received_at: received })
        .collect();
    expected.push(ReceivedEvent { event: second[1].clone(), system: other.clone(), received_at: later });
    assert_eq!(every_event(store).await, expected, "the resent id kept its first event, system and receipt");
    assert_eq!(store.queue_events.append(&posting, &first, later).await.unwrap(), vec![false; 6], "resent whole");
    assert_eq!(every_event(store).await, expected);
    assert!(store.queue_events.append(&posting, &[], later).await.unwrap().is_empty());
    let now = store.view.revisions().await.unwrap();
    assert_eq!(now.queue_events - revisions.queue_events, 2, "one move per append that stored an event");
    assert_eq!(moved(revisions, now), ["queue_events"]);
}

async fn an_id_repeated_within_one_batch_is_new_only_the_first_time(store: &Store) {
    let system = system_id("queue.branch-a");
    let batch = [
        queue_event("same", "00042", NOW_MICROS, issued("A001")),
        queue_event("other", "00042", NOW_MICROS, issued("A002")),
        queue_event("same", "00042", NOW_MICROS + 1, issued("A003")),
    ];
    let new = store.queue_events.append(&system, &batch, micros(NOW_MICROS)).await.unwrap();
    assert_eq!(new, vec![true, true, false]);
    let stored = store.queue_events.happened_since(micros(i64::MIN)).await.unwrap();
    assert_eq!(stored, vec![batch[1].clone(), batch[0].clone()], "the first of the id is the one kept (A001)");
}

async fn a_batch_of_a_thousand_queue_events_is_appended_in_one_step(store: &Store) {
    let system = system_id("queue.branch-a");
    let batch: Vec<QueueEvent> =
        (0..1_000).map(|n| queue_event(&format!("ev-{n:04}"), "00042", NOW_MICROS + n, issued("A001"))).collect();
    assert_eq!(store.queue_events.append(&system, &batch, micros(NOW_MICROS)).await.unwrap(), vec![true; 1_000]);
    assert_eq!(store.queue_events.happened_since(micros(i64::MIN)).await.unwrap(), batch);
}

async fn queue_events_that_happened_since_come_in_the_order_they_are_applied(store: &Store) {
    let system = system_id("queue.branch-a");
    let since = NOW_MICROS;
    // At one instant: a counter opens, tickets are issued, one is called, a counter
    // closes; their ids sort the other way.
    let batch = [
        queue_event("a-closes", "00042", since + 5, closed("C1")),
        queue_event("b-called", "00042", since + 5, called("A001", "C2")),
        queue_event("z-issued", "00042", since + 5, issued("A002")),
        queue_event("y-opens", "00042", since + 5, opened("C2")),
        queue_event("c-issued", "00043", since + 5, issued("A001")),
        queue_event("d-before", "00042", since - 1, opened("C1")),
        queue_event("x-at-since", "00042", since, opened("C1")),
    ];
    store.queue_events.append(&system, &batch, micros(since + 10)).await.unwrap();
    let late = [queue_event("e-earlier", "00042", since + 4, issued("A000"))];
    store.queue_events.append(&system, &late, micros(since + 20)).await.unwrap();
    let applied = store.queue_events.happened_since(micros(since)).await.unwrap();
    assert_eq!(
        ids(&applied),
        ["x-at-since", "e-earlier", "y-opens", "c-issued", "z-issued", "b-called", "a-closes"],
        "by when, then opened, issued, called, closed, then id; from `since` on"
    );
    let mut sorted = applied.clone();
    sorted.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    assert_eq!(applied, sorted);
}

async fn queue_events_received_since_come_by_receipt_then_id(store: &Store) {
    let (a, b) = (system_id("queue.branch-a"), system_id("queue.branch-b"));
    let event = |id: &str| queue_event(id, "00042", NOW_MICROS, issued("A001"));
    let (first, second, third) = (micros(NOW_MICROS + 1), micros(NOW_MICROS + 2), micros(NOW_MICROS + 3));
    store.queue_events.append(&a, &[event("m"), event("a")], first).await.unwrap();
    store.queue_events.append(&b, &[event("z"), event("b")], second).await.unwrap();
    store.queue_events.append(&a, &[event("c")], third).await.unwrap();
    let found = store.queue_events.received_since(second).await.unwrap();
    let listed: Vec<(&str, &str, EventTime)> =
        found.iter().map(|kept| (kept.event.id.as_str(), kept.system.as_str(), kept.received_at)).collect();
    assert_eq!(
        listed,
        [("b", "queue.branch-b", second), ("z", "queue.branch-b", second), ("c", "queue.branch-a", third)]
    );
    assert_eq!(store.queue_events.received_since(micros(NOW_MICROS + 4)).await.unwrap(), vec![], "none since");
    let every = every_event(store).await;
    let every: Vec<&str> = every.iter().map(|kept| kept.event.id.as_str()).collect();
    assert_eq!(every, ["a", "m", "b", "z", "c"], "from the first on, each receipt's events by id");
}

async fn two_appends_at_once_of_overlapping_batches_store_each_event_once(store: &Store) {
    for round in 0..5 {
        let event = |n: usize| queue_event(&format!("r{round}-{n:03}"), "00042", NOW_MICROS, issued("A001"));
        // 0..200 and 100..300, the second in reverse: 100 ids in both, met in opposite orders.
        let one: Vec<QueueEvent> = (0..200).map(event).collect();
        let other: Vec<QueueEvent> = (100..300).rev().map(event).collect();
        let mut appends = tokio::task::JoinSet::new();
        for (name, batch) in [("queue.branch-a", one.clone()), ("queue.branch-b", other.clone())] {
            let events = Arc::clone(&store.queue_events);
            appends.spawn(async move {
                let new = events.append(&system_id(name), &batch, micros(NOW_MICROS)).await;
                (batch, new)
            });
        }
        let mut told_new = std::collections::BTreeMap::<String, usize>::new();
        for (batch, new) in appends.join_all().await {
            let new = new.unwrap_or_else(|error| panic!("round {round}: {error}"));
            assert_eq!(new.len(), batch.len());
            for (event, new) in batch.iter().zip(new) {
                *told_new.entry(event.id.as_str().to_owned()).or_default() += usize::from(new);
            }
        }
        assert_eq!(told_new.len(), 300);
        assert!(told_new.values().all(|&times| times == 1), "round {round}: each id new exactly once: {told_new:?}");
    }
    assert_eq!(every_event(store).await.len(), 1_500, "every event stored once");
}

async fn queue_events_that_happened_before_a_time_are_forgotten(store: &Store) {
    let system = system_id("queue.branch-a");
    let at = |id: &str, at: i64| queue_event(id, "00042", at, issued("A001"));
    let batch = [
        at("two-before", NOW_MICROS - 2),
        at("just-before", NOW_MICROS - 1),
        at("at", NOW_MICROS),
        at("after", NOW_MICROS + 1),
    ];
    store.queue_events.append(&system, &batch, micros(NOW_MICROS + 2)).await.unwrap();
    assert_eq!(store.queue_events.forget_before(micros(NOW_MICROS)).await.unwrap(), 2);
    assert_eq!(ids(&store.queue_events.happened_since(micros(i64::MIN)).await.unwrap()), ["at", "after"]);
    assert_eq!(store.queue_events.forget_before(micros(NOW_MICROS)).await.unwrap(), 0, "nothing left before then");
    assert_eq!(every_event(store).await.len(), 2);
}

/// The freshness window the checks apply states with, in minutes.
const FRESH: f64 = 15.0;

fn state_event(id: &str, atm: &str, at: i64, state: Reported, unavailable: u32) -> AtmStateEvent {
    AtmStateEvent {
        id: EventId::parse(id).unwrap(),
        atm: AtmId::parse(atm).unwrap(),
        at: micros(at),
        state,
        unavailable: Services(unavailable),
        reason: (state == Reported::OutOfService).then(|| Reason::parse("Safe jammed: engineer on the way").unwrap()),
        expected_back_at: (state == Reported::OutOfService).then(|| micros(at + 3_600_000_000)),
    }
}

async fn states(store: &Store) -> Vec<(String, Reported, EventTime, EventTime)> {
    let all = store.atm_states.all().await.unwrap();
    all.into_iter().map(|(atm, kept)| (atm.as_str().to_owned(), kept.state, kept.since, kept.heard.0)).collect()
}

/// The state `second` leaves after `first`, as the domain computes it.
fn state_after(first: &AtmStateEvent, second: &AtmStateEvent) -> AtmState {
    AtmState::after(AtmState::after(None, first, FRESH).as_ref(), second, FRESH).unwrap()
}

async fn state_events_apply_in_at_order_and_a_resent_or_older_one_changes_nothing(store: &Store) {
    use StateOutcome::{Applied, Duplicate, Superseded};
    let system = system_id("atm.monitoring");
    let revisions = store.view.revisions().await.unwrap();
    let first = [
        state_event("s-2", "LFFFBC11", NOW_MICROS + 2, Reported::OutOfService, 0),
        state_event("s-1", "LFFFBC11", NOW_MICROS + 1, Reported::InService, AtmService::CashDeposits.bit()),
        state_event("s-3", "B\u{e9}ta 7", NOW_MICROS, Reported::InService, 0),
    ];
    let outcomes = store.atm_states.apply(&system, &first, micros(NOW_MICROS + 10), FRESH).await.unwrap();
    assert_eq!(outcomes, [Applied, Applied, Applied], "s-1 then s-2, whatever their place in the batch");
    let all = store.atm_states.all().await.unwrap();
    assert_eq!(all.len(), 2);
    let (atm, kept) = &all[0];
    assert_eq!(atm.as_str(), "B\u{e9}ta 7", "by ATM id, in byte order");
    assert_eq!((kept.state, kept.unavailable, kept.reason.clone()), (Reported::InService, Services(0), None));
    let (atm, kept) = &all[1];
    assert_eq!(atm.as_str(), "LFFFBC11");
    assert_eq!(kept, &state_after(&first[1], &first[0]), "every field, as the domain made it");

    let later = [
        state_event("s-2", "LFFFBC11", NOW_MICROS + 9, Reported::InService, 0),
        state_event("s-0", "LFFFBC11", NOW_MICROS, Reported::InService, 0),
        state_event("s-4", "LFFFBC11", NOW_MICROS + 5, Reported::OutOfService, 0),
    ];
    let outcomes = store.atm_states.apply(&system, &later, micros(NOW_MICROS + 20), FRESH).await.unwrap();
    assert_eq!(outcomes, [Duplicate, Superseded, Applied]);
    let listed = states(store).await;
    let expected = ("LFFFBC11".to_owned(), Reported::OutOfService, micros(NOW_MICROS + 2), micros(NOW_MICROS + 5));
    assert_eq!(listed[1], expected, "the same state goes on since s-2");
    let only_old = [state_event("s-5", "LFFFBC11", NOW_MICROS + 3, Reported::InService, 0)];
    let before = store.view.revisions().await.unwrap();
    assert_eq!(store.atm_states.apply(&system, &only_old, micros(NOW_MICROS + 30), FRESH).await.unwrap(), [Superseded]);
    assert_eq!(moved(before, store.view.revisions().await.unwrap()), Vec::<&str>::new(), "nothing changed");
    let now = store.view.revisions().await.unwrap();
    assert_eq!(now.atm_states - revisions.atm_states, 2, "one move per apply that changed a state");
    assert_eq!(moved(revisions, now), ["atm_states", "atm_changes"], "and each fed its changes");
}

async fn two_state_applies_at_once_each_build_on_the_others_commit(store: &Store) {
    let system = system_id("atm.monitoring");
    for round in 0..5i64 {
        let base = NOW_MICROS + round * 1_000;
        // Two writers, each with the same 50 ATMs, their times interleaved: the newer wins.
        let batch = |parity: i64| -> Vec<AtmStateEvent> {
            let state = if parity == 0 { Reported::InService } else { Reported::OutOfService };
            let event = |n: i64| {
                state_event(&format!("r{round}-{parity}-{n}"), &format!("ATM{n:03}"), base + 2 * n + parity, state, 0)
            };
            (0..50).map(event).collect()
        };
        let mut applies = tokio::task::JoinSet::new();
        for parity in [0, 1] {
            let states = Arc::clone(&store.atm_states);
            let events = batch(parity);
            let system = system.clone();
            applies.spawn(async move { states.apply(&system, &events, micros(base), FRESH).await });
        }
        for outcome in applies.join_all().await {
            outcome.unwrap_or_else(|error| panic!("round {round}: {error}"));
        }
        let all = store.atm_states.all().await.unwrap();
        assert_eq!(all.len(), 50);
        for (n, (atm, kept)) in (0i64..).zip(&all) {
            assert_eq!(atm.as_str(), format!("ATM{n:03}"));
            assert_eq!(kept.heard.0, micros(base + 2 * n + 1), "round {round}: the newer, whichever committed last");
            assert_eq!(kept.state, Reported::OutOfService);
        }
    }
}

async fn state_event_ids_that_happened_before_a_time_are_forgotten_and_the_states_kept(store: &Store) {
    let system = system_id("atm.monitoring");
    let events = [
        state_event("old", "A1", NOW_MICROS - 1, Reported::InService, 0),
        state_event("new", "A2", NOW_MICROS, Reported::InService, 0),
    ];
    store.atm_states.apply(&system, &events, micros(NOW_MICROS), FRESH).await.unwrap();
    assert_eq!(store.atm_states.forget_before(micros(NOW_MICROS)).await.unwrap(), 1);
    assert_eq!(store.atm_states.forget_before(micros(NOW_MICROS)).await.unwrap(), 0);
    assert_eq!(states(store).await.len(), 2, "states stay");
    let resent = store.atm_states.apply(&system, &events, micros(NOW_MICROS + 1), FRESH).await.unwrap();
    assert_eq!(resent, [StateOutcome::Superseded, StateOutcome::Duplicate], "a forgotten id is new again");
}

macro_rules! contract_suite {
    ($($(#[$attribute:meta])* $backend:ident),+ $(,)?) => {
        $(
            mod $backend {
                every_check!($backend; [$(#[$attribute])*];
                    a_store_tells_which_kinds_of_data_it_holds,
                    clients_round_trip_and_cannot_be_registered_twice,
                    a_clients_addresses_are_replaced_list_by_list,
                    a_clients_status_is_set_and_its_live_tokens_revoked,
                    supported_channels_are_a_set,
                    wait_times_are_upserted_and_keep_leading_zeros,
                    tokens_are_found_by_opaque_token_and_revoked_once,
                    a_token_id_cannot_be_recorded_twice,
                    expired_tokens_are_purged_and_live_ones_kept,
                    a_purge_of_more_records_than_a_batch_purges_every_expired_one,
                    a_purge_reaches_every_clients_records_and_their_revocations,
                    opaque_tokens_that_differ_only_in_case_or_a_trailing_space_are_different_tokens,
                    a_clients_revocation_and_its_tokens_revocations_at_once_all_succeed,
                    live_token_records_are_listed_with_their_revocation,
                    rotation_keeps_one_current_key_and_publishes_recently_retired_ones,
                    a_next_key_retires_the_current_one_at_its_activation_and_an_immediate_one_drops_it,
                    a_revoked_key_is_withdrawn_at_once_and_its_replacement_takes_its_place_in_the_same_step,
                    each_write_moves_its_topics_change_counter_and_no_other,
                    the_atm_set_is_replaced_whole_and_read_back_in_brand_then_id_order,
                    an_atm_set_changes_by_its_differences_in_one_step,
                    two_atm_imports_at_once_apply_one_after_the_other,
                    two_wait_time_imports_at_once_apply_one_after_the_other,
                    an_edit_started_while_another_plans_reads_what_the_other_wrote,
                    imports_are_counted_by_kind_and_outcome_with_the_last_time,
                    a_closed_store_answers_unavailable,
                    a_view_that_cannot_reach_its_store_stops_vouching_for_its_data,
                    the_view_serves_what_the_store_holds_and_follows_its_changes,
                    planned_outages_round_trip_soonest_first_and_go_when_cancelled,
                    planned_outages_that_are_over_are_not_listed,
                    an_outage_id_is_stored_once,
                    systems_are_listed_by_id_found_one_by_one_and_cannot_be_registered_twice,
                    a_systems_status_is_set_and_an_unknown_system_is_told_apart,
                    a_systems_keys_and_scopes_are_changed_each_without_the_other,
                    an_assertion_is_accepted_once_per_system,
                    uses_of_one_assertion_at_once_are_accepted_exactly_once,
                    forgetting_assertions_drops_only_the_expired_ones,
                    queue_events_are_appended_once_and_a_resent_id_changes_nothing,
                    an_id_repeated_within_one_batch_is_new_only_the_first_time,
                    a_batch_of_a_thousand_queue_events_is_appended_in_one_step,
                    queue_events_that_happened_since_come_in_the_order_they_are_applied,
                    queue_events_received_since_come_by_receipt_then_id,
                    two_appends_at_once_of_overlapping_batches_store_each_event_once,
                    queue_events_that_happened_before_a_time_are_forgotten,
                    state_events_apply_in_at_order_and_a_resent_or_older_one_changes_nothing,
                    two_state_applies_at_once_each_build_on_the_others_commit,
                    state_event_ids_that_happened_before_a_time_are_forgotten_and_the_states_kept,
                    closures_are_of_atms_of_the_set_read_with_it_and_forgotten_with_their_atm,
                    the_change_feed_numbers_every_change_of_the_set_states_and_closures_in_order,
                    forgotten_changes_raise_the_floor_and_later_ones_stay,
                    a_reader_following_the_feed_while_writers_commit_at_once_skips_no_change,
                );
            }
        )+

        #[test]
        fn every_registered_backend_runs_the_contract() {
            let checked = [$(stringify!($backend)),+];
            for backend in adapters::BACKENDS {
                assert!(checked.contains(&backend.name), "add `{}` to contract_suite! in this file", backend.name);
            }
        }
    };
}

/// One `#[tokio::test]` per check, on a fresh store of `$backend`.
macro_rules! every_check {
    ($backend:ident; $attributes:tt; $($check:ident),+ $(,)?) => {
        $(
            one_check!($backend; $attributes; $check);
        )+
    };
}

/// One check as a test, with the backend's attributes (`[#[…] …]`, one token tree so
/// that it repeats once per check).
macro_rules! one_check {
    ($backend:ident; [$(#[$attribute:meta])*]; $check:ident) => {
        // Two worker threads, so that checks of writers at once run them at once.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attribute])*
        async fn $check() {
            let Some(fresh) = super::fresh(stringify!($backend)).await else { return };
            super::$check(&fresh.store).await;
        }
    };
}

// Every registered backend, one a line (with attributes for its tests, if it needs any).
// A backend that needs a server says `SKIPPED` and returns when none is named, and fails
// under `CI=true` (`fresh_store_url`).
contract_suite! {
    sqlite,
    postgres,
    mysql,
    memory,
}

/// The finding: several instances starting together on one PostgreSQL store raced to
/// make the same token partitions, and each loser reported the store as unavailable
/// ("relation … already exists"); purging at once, one dropped what another was
/// emptying. Upkeep of many instances at once now neither fails nor says so.
#[tokio::test]
async fn the_token_upkeep_of_several_instances_at_once_on_postgres_neither_fails_nor_blames_the_store() {
    let Some(kept) = fresh_store_url("postgres").await else { return };
    let first = Store::open(&kept.url).await.unwrap();
    first.lifecycle.migrate().await.unwrap();
    let mut instances = vec![first];
    for _ in 1..6 {
        instances.push(Store::open(&kept.url).await.unwrap());
    }
    let five_hours_ago = NOW - 5 * 3600;
    let mut prepared = tokio::task::JoinSet::new();
    for store in &instances {
        let lifecycle = Arc::clone(&store.lifecycle);
        prepared.spawn(async move { lifecycle.prepare(five_hours_ago).await });
    }
    for outcome in prepared.join_all().await {
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    let tokens: Vec<_> = (0..40).map(|i| token(i, "a-app", NOW - 3 * 3600 - i64::from(i) * 60)).collect();
    instances[0].tokens.record(&tokens).await.unwrap();
    let mut purges = tokio::task::JoinSet::new();
    for store in &instances {
        let archive = Arc::clone(&store.tokens);
        purges.spawn(async move { archive.purge_expired(NOW).await });
    }
    for outcome in purges.join_all().await {
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    for token in &tokens {
        assert!(instances[0].tokens.find(&token.opaque_token).await.unwrap().is_none(), "purged");
    }
}

/// The finding: instances started together on a new PostgreSQL store each loaded the
/// demo data set, and one failed to start: two writes of the ATM set at once both
/// emptied the table and the second then met the first's rows. Writers of the set now
/// take turns, as two `atms import`s at once must too: on every store that several
/// processes share, each writer with a store (a pool) of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_of_the_atm_set_from_several_stores_at_once_take_turns_on_every_shared_backend() {
    for backend in adapters::BACKENDS.iter().filter(|backend| backend.shared_across_processes) {
        let Some(kept) = fresh_store_url(backend.name).await else { continue };
        let first = Store::open(&kept.url).await.unwrap();
        first.lifecycle.migrate().await.unwrap();
        let mut writes = tokio::task::JoinSet::new();
        for n in 0..6 {
            let atms = Arc::clone(&Store::open(&kept.url).await.unwrap().atms);
            let set = brand("Alfa", &["A1", "A2", "A3"]);
            writes.spawn(async move { atms.replace(&set, NOW + n).await });
        }
        for outcome in writes.join_all().await {
            assert!(outcome.is_ok(), "{}: {outcome:?}", backend.name);
        }
        assert_eq!(ids_of(&first.view.atms().await.unwrap()), ["Alfa/A1", "Alfa/A2", "Alfa/A3"], "{}", backend.name);
    }
}

/// `SystemRecords::find` reads the store itself: a system disabled through one store (an
/// operator's CLI, another instance) is refused at once through every other, on every
/// backend, with no copy in memory to wait out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_disabled_through_one_store_is_found_disabled_at_once_through_another_on_every_backend() {
    for backend in adapters::BACKENDS {
        let Some(kept) = fresh_store_url(backend.name).await else { continue };
        let operator = Store::open(&kept.url).await.unwrap();
        operator.lifecycle.migrate().await.unwrap();
        let instance = Store::open(&kept.url).await.unwrap();
        assert!(operator.systems.insert(&system("queue.branch-a"), NOW).await.unwrap());
        let id = system_id("queue.branch-a");
        assert_eq!(instance.systems.find(&id).await.unwrap().unwrap().status, ClientStatus::Active, "{}", backend.name);
        assert!(operator.systems.set_status(&id, ClientStatus::Disabled).await.unwrap());
        let found = instance.systems.find(&id).await.unwrap().unwrap();
        assert_eq!(found.status, ClientStatus::Disabled, "{}", backend.name);
    }
}
