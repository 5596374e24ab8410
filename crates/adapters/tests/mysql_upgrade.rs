//! Upgrading a MariaDB store keeps what it holds: the migration that moves revocations to
//! a table of their own (`revoked_tokens`) is applied here to a store written by the
//! release before it. Needs `TEST_MYSQL_URL` (`.ci/run` sets it).

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use adapters::store::Store;
use adapters::testing::{TempFolder, fresh_store_url};
use domain::token::{OpaqueToken, TokenId};
use sqlx::migrate::Migrator;
use sqlx::mysql::MySqlPoolOptions;

const NOW: i64 = 1_800_000_000;

/// The migration that keeps revocations apart: the store is migrated up to it, not
/// through it.
const SPLIT: &str = "20261129000009";

#[tokio::test]
async fn revocations_made_before_the_upgrade_stay_in_force_and_token_writes_enter_three_indexes() {
    let Some(fresh) = fresh_store_url("mysql").await else { return };
    let folder = TempFolder::create();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/mysql");
    for entry in std::fs::read_dir(source).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_str().unwrap() < SPLIT {
            std::fs::copy(&path, folder.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    let pool = MySqlPoolOptions::new().connect(&fresh.url).await.unwrap();
    Migrator::new(folder.path()).await.unwrap().run(&pool).await.unwrap();
    // A live revoked token, an expired revoked one, and a live one, as that release wrote them.
    sqlx::query(
        "INSERT INTO issued_tokens (jti, opaque_token, client_id, session_id, issued_at, expires_at, revoked_at) \
         VALUES ('jti-live-revoked', 'opaque-1', 'demo-app', 'sid-1', ?, ?, ?), \
                ('jti-old-revoked', 'opaque-2', 'demo-app', 'sid-2', ?, ?, ?), \
                ('jti-live', 'opaque-3', 'demo-app', 'sid-3', ?, ?, NULL)",
    )
    .bind(NOW - 10)
    .bind(NOW + 1800)
    .bind(NOW - 5)
    .bind(NOW - 4000)
    .bind(NOW - 2200)
    .bind(NOW - 3000)
    .bind(NOW - 10)
    .bind(NOW + 1800)
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;

    let store = Store::open(&fresh.url).await.unwrap();
    store.lifecycle.migrate().await.unwrap();
    assert_eq!(store.tokens.revoked_live(NOW).await.unwrap(), vec![TokenId::new("jti-live-revoked".into())]);
    let mut long_ago = store.tokens.revoked_live(NOW - 5000).await.unwrap();
    long_ago.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(long_ago, vec![TokenId::new("jti-live-revoked".into()), TokenId::new("jti-old-revoked".into())]);
    let kept = store.tokens.find(&OpaqueToken::new("opaque-1".into())).await.unwrap().unwrap();
    assert_eq!(kept.revoked_at, Some(NOW - 5), "the record keeps its revocation");

    // A revocation after the upgrade joins them; the purge takes the expired one.
    assert!(store.tokens.revoke(&TokenId::new("jti-live".into()), NOW).await.unwrap());
    assert_eq!(store.tokens.revoked_live(NOW).await.unwrap().len(), 2);
    assert_eq!(store.tokens.purge_expired(NOW).await.unwrap(), 1);
    assert_eq!(
        store.tokens.revoked_live(NOW - 5000).await.unwrap().len(),
        2,
        "the purged one's revocation went with it"
    );

    // A revocation cleared by hand (plain SQL) leaves the revoked ones too.
    let pool = MySqlPoolOptions::new().connect(&fresh.url).await.unwrap();
    sqlx::query("UPDATE issued_tokens SET revoked_at = NULL WHERE jti = 'jti-live'").execute(&pool).await.unwrap();
    assert_eq!(store.tokens.revoked_live(NOW).await.unwrap(), vec![TokenId::new("jti-live-revoked".into())]);

    // What each token write enters: the primary key, the opaque token's index and the
    // client's, no more.
    let indexes: Vec<(String,)> = sqlx::query_as(
        "SELECT DISTINCT index_name FROM information_schema.statistics \
         WHERE table_schema = DATABASE() AND table_name = 'issued_tokens' ORDER BY index_name",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let names: Vec<&str> = indexes.iter().map(|(name,)| name.as_str()).collect();
    assert_eq!(names, ["issued_tokens_by_client", "issued_tokens_by_opaque", "PRIMARY"]);
    pool.close().await;
}
