//! Upgrading a SQLite store keeps what it holds: each migration that rebuilds a table
//! is applied here to a store written by the releases before it.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use adapters::store::Store;
use domain::token::{OpaqueToken, TokenId};
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqlitePool, SqlitePoolOptions};

const NOW: i64 = 1_800_000_000;

/// A store migrated only up to and including `last` (a migration file's version prefix),
/// and its URL.
async fn migrated_to(folder: &Path, last: &str) -> (SqlitePool, String) {
    let migrations = folder.join("migrations");
    std::fs::create_dir(&migrations).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/sqlite");
    for entry in std::fs::read_dir(source).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_str().unwrap() <= last {
            std::fs::copy(&path, migrations.join(path.file_name().unwrap())).unwrap();
        }
    }
    let url = format!("sqlite://{}?mode=rwc", folder.join("store.db").display());
    let pool = SqlitePoolOptions::new().connect(&url).await.unwrap();
    Migrator::new(migrations.as_path()).await.unwrap().run(&pool).await.unwrap();
    (pool, url)
}

/// The store at `url`, written through `pool` by an older release, opened and migrated
/// as a new release does it.
async fn upgraded(pool: SqlitePool, url: &str) -> Store {
    pool.close().await;
    let store = Store::open(url).await.unwrap();
    store.lifecycle.migrate().await.unwrap();
    store
}

/// A store as of `last`, holding two tokens.
async fn store_as_of(folder: &Path, last: &str) -> String {
    let (pool, url) = migrated_to(folder, last).await;
    // Two tokens as the rowid table with random (version-4) token ids held them.
    sqlx::query(
        "INSERT INTO issued_tokens (jti, opaque_token, client_id, session_id, issued_at, expires_at, \
         code_challenge, revoked_at) VALUES \
         ('9b2e4a0c-6c0e-4d1e-9a57-8a1f0c3b7d21', 'live-opaque', 'demo-app', 'sid-1', ?1, ?2, NULL, NULL), \
         ('0f6d1c3e-2b4a-4e8f-b1d2-3c4e5f607182', 'revoked-opaque', 'demo-app', 'sid-2', ?1, ?2, NULL, ?1)",
    )
    .bind(NOW)
    .bind(NOW + 1800)
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    url
}

#[tokio::test]
async fn tokens_issued_before_the_jti_keyed_table_survive_the_upgrade() {
    let folder = tempfile::tempdir().unwrap();
    let url = store_as_of(folder.path(), "20261121000002").await;

    let store = Store::open(&url).await.unwrap();
    store.lifecycle.migrate().await.unwrap();

    let live = store.tokens.find(&OpaqueToken::new("live-opaque".into())).await.unwrap().unwrap();
    assert_eq!(live.token.token_id, TokenId::new("9b2e4a0c-6c0e-4d1e-9a57-8a1f0c3b7d21".into()));
    assert_eq!(live.token.expires_at, NOW + 1800);
    assert_eq!(live.revoked_at, None);
    let revoked = store.tokens.revoked_live(NOW).await.unwrap();
    assert_eq!(revoked, vec![TokenId::new("0f6d1c3e-2b4a-4e8f-b1d2-3c4e5f607182".into())]);

    // Revoking still moves the revocations topic, so running services hear of it.
    let before = store.view.revisions().await.unwrap().revocations;
    assert!(store.tokens.revoke(&live.token.token_id, NOW + 1).await.unwrap());
    assert!(store.view.revisions().await.unwrap().revocations > before);
}

#[tokio::test]
async fn atms_imported_before_their_columns_existed_are_listed_as_if_imported_today() {
    let folder = tempfile::tempdir().unwrap();
    let (pool, url) = migrated_to(folder.path(), "20261121000003").await;
    let mut today = domain::demo::atms().unwrap();
    // Beside the demo set: no coordinates, a service given twice, accessibility features.
    let other = serde_json::json!({
        "Identification": "O1",
        "ATMServices": ["Balance", "PINChange", "Balance"],
        "Accessibility": ["WheelchairAccess", "AudioCashMachine"],
        "SupportedCurrencies": ["MXN"],
        "Location": {"PostalAddress": {"Country": "MX"}}
    });
    today.push(domain::testing::stored_atm("Otro", &other));
    // Rows as releases before the columns wrote them: brand, identification, JSON.
    for atm in &today {
        sqlx::query("INSERT INTO atms (brand_name, identification, record) VALUES (?, ?, ?)")
            .bind(&atm.brand)
            .bind(&atm.identification)
            .bind(&atm.record)
            .execute(&pool)
            .await
            .unwrap();
    }
    let store = upgraded(pool, &url).await;

    let upgraded = store.view.atms().await.unwrap().atms;
    today.sort_by(|a, b| (&a.brand, &a.identification).cmp(&(&b.brand, &b.identification)));
    assert_eq!(upgraded.len(), 1_201);
    assert_eq!(upgraded, today, "services, accessibility and coordinates derived as an import derives them");
}

#[tokio::test]
async fn keys_stored_before_pre_publication_sign_from_when_they_were_made() {
    use domain::ports::KeyGenerator as _;
    let folder = tempfile::tempdir().unwrap();
    let (pool, url) = migrated_to(folder.path(), "20261122000005").await;
    let old = adapters::jwt::Ed25519Keys.generate(NOW - 600).unwrap();
    let current = adapters::jwt::Ed25519Keys.generate(NOW).unwrap();
    for (key, retired_at) in [(&old, Some(NOW)), (&current, None)] {
        sqlx::query(
            "INSERT INTO signing_keys (kid, algorithm, private_key, public_key, created_at, retired_at) \
             VALUES (?, 'EdDSA', ?, ?, ?, ?)",
        )
        .bind(&key.kid)
        .bind(&key.private_pkcs8)
        .bind(&key.public_key)
        .bind(key.created_at)
        .bind(retired_at)
        .execute(&pool)
        .await
        .unwrap();
    }
    let store = upgraded(pool, &url).await;
    let keys = store.keys.published(i64::MIN).await.unwrap();
    let kids: Vec<(&str, i64, bool)> =
        keys.iter().map(|key| (key.kid.as_str(), key.activates_at, key.signs_at(NOW + 1))).collect();
    assert_eq!(kids, [(current.kid.as_str(), NOW, true), (old.kid.as_str(), NOW - 600, false)]);
}
