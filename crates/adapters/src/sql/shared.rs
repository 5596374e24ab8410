//! [`shared_sql_records!`]: every role of a SQL store, in the statements every dialect runs.

/// Implements every role a [`Store`](crate::store::Store) needs for `$store`, a type that
/// implements [`SqlDialect`](crate::sql::SqlDialect), registered as `$backend` (its
/// migrations are `migrations/<$backend.name>`): the shared statements
/// ([`Statements`](crate::sql::Statements), rendered once for the backend's syntax) are
/// bound and read here; the rest is a call to the dialect's own method of the same purpose.
macro_rules! shared_sql_records {
    ($store:ty, $backend:expr) => {
        // An unnamed constant's scope of its own, so that these imports meet none of the
        // backend module's.
        const _: () = {
            use async_trait::async_trait;
            use domain::atm_catalog::StoredAtm;
            use domain::branch::WaitTimeEstimate;
            use domain::client::{ChannelScope, ClientChanges, ClientId, ClientRegistration, ClientStatus};
            use domain::dpop::DpopPolicy;
            use domain::outage::{OutageId, PlannedOutage};
            use domain::ports::{
                AtmRecords, AtmSetEdit, ChannelRecords, ClientRecords, EditPlan, ImportKind, ImportLog, ImportOutcome,
                ImportTally, OutageRecords, SigningKeyRecords, StoreInventory, StoreUnavailable, TokenArchive,
                WaitTimeRecords,
            };
            use domain::store_contents::StoreContents;
            use domain::token::{IssuedToken, OpaqueToken, SigningKey, TokenId, TokenRecord};
            use tracing::Instrument as _;
            use $crate::rows;
            use $crate::sql::{SqlDialect, Statements};
            use $crate::store::{AtmSet, ChangeFeed, KeyVault, Revisions, StoreLifecycle, ViewSource};

            /// The shared statements in this backend's syntax, rendered at first use.
            fn sql() -> &'static Statements {
                static STATEMENTS: std::sync::LazyLock<Statements> =
                    std::sync::LazyLock::new(|| Statements::new(&<$store as SqlDialect>::SYNTAX));
                &STATEMENTS
            }

            /// A CLIENT span of one statement (OpenTelemetry's database conventions),
            /// named `"{operation} {table}"`: seen only under a traced request or a traced
            /// background task.
            fn db(name: &'static str) -> tracing::Span {
                $crate::sql::db_span(<$store as SqlDialect>::SYSTEM, name)
            }

            /// A driver's error, as this backend reads it.
            fn unavailable(error: sqlx::Error) -> StoreUnavailable {
                $crate::sql::unavailable::<$store>(error)
            }

            /// Whether an INSERT that skips a stored key inserted its row: a dialect with no
            /// clause to skip it ([`Syntax::skip_duplicates`]($crate::sql::Syntax)) answers
            /// with the duplicate's error instead.
            fn inserted(
                done: Result<<<$store as SqlDialect>::Database as sqlx::Database>::QueryResult, sqlx::Error>,
            ) -> Result<bool, StoreUnavailable> {
                match done {
                    Ok(done) => Ok(done.rows_affected() == 1),
                    Err(sqlx::Error::Database(error)) if error.is_unique_violation() => Ok(false),
                    Err(error) => Err(unavailable(error)),
                }
            }

            /// The ATM set and its date, read in `transaction` (a writer's, holding the set's
            /// lock, or a reader's snapshot).
            async fn read_atm_set(
                transaction: &mut sqlx::Transaction<'static, <$store as SqlDialect>::Database>,
            ) -> Result<AtmSet, StoreUnavailable> {
                let (last_updated,): (i64,) =
                    sqlx::query_as(sql().atm_set_date).fetch_one(&mut **transaction).await.map_err(unavailable)?;
                let found: Vec<rows::AtmRow> =
                    sqlx::query_as(sql().atms_in_order).fetch_all(&mut **transaction).await.map_err(unavailable)?;
                let atms = found.into_iter().map(rows::atm).collect::<Result<_, _>>()?;
                Ok(AtmSet { atms, last_updated })
            }

            #[async_trait]
            impl StoreLifecycle for $store {
                #[tracing::instrument(skip(self))]
                async fn migrate(&self) -> Result<(), StoreUnavailable> {
                    $crate::sql::migrations::of($backend.name)?.run(self.pool()).await.map_err(StoreUnavailable::new)
                }

                async fn ping(&self) -> Result<(), StoreUnavailable> {
                    sqlx::query(sql().ping).fetch_optional(self.pool()).await.map(drop).map_err(unavailable)
                }

                async fn prepare(&self, now: i64) -> Result<(), StoreUnavailable> {
                    SqlDialect::prepare(self, now).await
                }

                async fn close(&self) {
                    self.pool().close().await;
                }
            }

            #[async_trait]
            impl ViewSource for $store {
                async fn revisions(&self) -> Result<Revisions, StoreUnavailable> {
                    let rows: Vec<(String, i64)> = sqlx::query_as(sql().revisions)
                        .fetch_all(self.pool())
                        .instrument(db("SELECT changes"))
                        .await
                        .map_err(unavailable)?;
                    Ok(Revisions::from_topics(rows))
                }

                async fn atms(&self) -> Result<AtmSet, StoreUnavailable> {
                    // One snapshot for both reads, so the set and its date belong together.
                    async {
                        let mut transaction = SqlDialect::begin_atm_read(self).await?;
                        let set = read_atm_set(&mut transaction).await?;
                        transaction.commit().await.map_err(unavailable)?;
                        Ok(set)
                    }
                    .instrument(db("SELECT atms"))
                    .await
                }

                async fn subscribe(&self) -> Result<Option<Box<dyn ChangeFeed>>, StoreUnavailable> {
                    SqlDialect::subscribe(self).await
                }
            }

            #[async_trait]
            impl ImportLog for $store {
                async fn record(
                    &self,
                    kind: ImportKind,
                    outcome: ImportOutcome,
                    at: i64,
                ) -> Result<(), StoreUnavailable> {
                    // The last time never moves back (a host whose clock is behind).
                    sqlx::query(sql().record_import)
                        .bind(kind.label())
                        .bind(outcome.label())
                        .bind(at)
                        .execute(self.pool())
                        .instrument(db("INSERT import_runs"))
                        .await
                        .map_err(unavailable)?;
                    Ok(())
                }

                async fn tally(&self) -> Result<Vec<ImportTally>, StoreUnavailable> {
                    let rows: Vec<rows::ImportRunRow> =
                        sqlx::query_as(sql().import_tally).fetch_all(self.pool()).await.map_err(unavailable)?;
                    Ok(rows::import_tally(rows))
                }
            }

            #[async_trait]
            impl OutageRecords for $store {
                async fn schedule(&self, outage: &PlannedOutage, now: i64) -> Result<(), StoreUnavailable> {
                    sqlx::query(sql().insert_outage)
                        .bind(outage.id.as_str())
                        .bind(outage.starts_at)
                        .bind(outage.duration.seconds())
                        .bind(i64::from(outage.partial))
                        .bind(outage.explanation.as_str())
                        .bind(now)
                        .execute(self.pool())
                        .await
                        .map_err(unavailable)?;
                    Ok(())
                }

                async fn not_over(&self, now: i64) -> Result<Vec<PlannedOutage>, StoreUnavailable> {
                    let found: Vec<rows::OutageRow> = sqlx::query_as(sql().outages_not_over)
                        .bind(now)
                        .fetch_all(self.pool())
                        .await
                        .map_err(unavailable)?;
                    found.into_iter().map(rows::outage).collect()
                }

                async fn cancel(&self, id: &OutageId) -> Result<bool, StoreUnavailable> {
                    let done = sqlx::query(sql().cancel_outage)
                        .bind(id.as_str())
                        .execute(self.pool())
                        .await
                        .map_err(unavailable)?;
                    Ok(done.rows_affected() > 0)
                }
            }

            #[async_trait]
            impl StoreInventory for $store {
                async fn contents(&self) -> Result<StoreContents, StoreUnavailable> {
                    let (clients, supported_channels, wait_times, atms, token_records): (bool, bool, bool, bool, bool) =
                        sqlx::query_as(sql().contents).fetch_one(self.pool()).await.map_err(unavailable)?;
                    Ok(StoreContents { clients, supported_channels, wait_times, atms, token_records })
                }
            }

            #[async_trait]
            impl ClientRecords for $store {
                async fn insert(&self, client: &ClientRegistration, now: i64) -> Result<bool, StoreUnavailable> {
                    let done = sqlx::query(sql().insert_client)
                        .bind(client.client_id.as_str())
                        .bind(client.scope.country.as_str())
                        .bind(client.scope.business.as_str())
                        .bind(client.scope.channel.as_str())
                        .bind(rows::redirect_uris_text(&client.redirect_uris)?)
                        .bind(rows::origins_text(&client.allowed_origins)?)
                        .bind(rows::status_text(client.status))
                        .bind(client.dpop.as_str())
                        .bind(now)
                        .execute(self.pool())
                        .await;
                    inserted(done)
                }

                async fn all(&self) -> Result<Vec<ClientRegistration>, StoreUnavailable> {
                    let found: Vec<rows::ClientRow> = sqlx::query_as(sql().clients)
                        .fetch_all(self.pool())
                        .instrument(db("SELECT clients"))
                        .await
                        .map_err(unavailable)?;
                    found.into_iter().map(rows::client).collect()
                }

                async fn set_status(
                    &self,
                    client_id: &ClientId,
                    status: ClientStatus,
                ) -> Result<bool, StoreUnavailable> {
                    let found = sqlx::query(sql().set_client_status)
                        .bind(rows::status_text(status))
                        .bind(client_id.as_str())
                        .execute(self.pool())
                        .await
                        .map_err(unavailable)?
                        .rows_affected();
                    Ok(found == 1)
                }

                async fn change(
                    &self,
                    client_id: &ClientId,
                    addresses: &ClientChanges,
                ) -> Result<bool, StoreUnavailable> {
                    let uris = addresses.redirect_uris.as_deref().map(rows::redirect_uris_text).transpose()?;
                    let origins = addresses.allowed_origins.as_deref().map(rows::origins_text).transpose()?;
                    let found = sqlx::query(sql().change_client)
                        .bind(uris)
                        .bind(origins)
                        .bind(addresses.dpop.map(DpopPolicy::as_str))
                        .bind(client_id.as_str())
                        .execute(self.pool())
                        .await
                        .map_err(unavailable)?
                        .rows_affected();
                    Ok(found == 1)
                }
            }

            #[async_trait]
            impl ChannelRecords for $store {
                async fn allow(&self, scope: &ChannelScope) -> Result<bool, StoreUnavailable> {
                    let done = sqlx::query(sql().allow_channel)
                        .bind(scope.country.as_str())
                        .bind(scope.business.as_str())
                        .bind(scope.channel.as_str())
                        .execute(self.pool())
                        .await;
                    inserted(done)
                }

                async fn all(&self) -> Result<Vec<ChannelScope>, StoreUnavailable> {
                    let found: Vec<(String, String, String)> = sqlx::query_as(sql().channels)
                        .fetch_all(self.pool())
                        .instrument(db("SELECT channels"))
                        .await
                        .map_err(unavailable)?;
                    found.iter().map(|(country, business, channel)| rows::scope(country, business, channel)).collect()
                }
            }

            #[async_trait]
            impl WaitTimeRecords for $store {
                async fn upsert(&self, estimates: &[WaitTimeEstimate]) -> Result<(), StoreUnavailable> {
                    async {
                        let mut transaction = SqlDialect::begin_wait_time_edit(self).await?;
                        <$store as SqlDialect>::write_wait_times(&mut transaction, estimates).await?;
                        transaction.commit().await.map_err(unavailable)
                    }
                    .instrument(db("UPSERT wait_times"))
                    .await
                }

                async fn all(&self) -> Result<Vec<WaitTimeEstimate>, StoreUnavailable> {
                    let found: Vec<rows::WaitTimeRow> = sqlx::query_as(sql().wait_times)
                        .fetch_all(self.pool())
                        .instrument(db("SELECT wait_times"))
                        .await
                        .map_err(unavailable)?;
                    found.into_iter().map(rows::wait_time).collect()
                }

                #[tracing::instrument(skip_all)]
                async fn edit<'a>(
                    &self,
                    plan: &mut EditPlan<'a, Vec<WaitTimeEstimate>, Vec<WaitTimeEstimate>>,
                ) -> Result<(), StoreUnavailable> {
                    let mut transaction = SqlDialect::begin_wait_time_edit(self).await?;
                    let found: Vec<rows::WaitTimeRow> =
                        sqlx::query_as(sql().wait_times).fetch_all(&mut *transaction).await.map_err(unavailable)?;
                    let stored = found.into_iter().map(rows::wait_time).collect::<Result<Vec<_>, _>>()?;
                    let writes = plan(&stored);
                    if writes.is_empty() {
                        return transaction.rollback().await.map_err(unavailable);
                    }
                    <$store as SqlDialect>::write_wait_times(&mut transaction, &writes).await?;
                    transaction.commit().await.map_err(unavailable)
                }
            }

            #[async_trait]
            impl AtmRecords for $store {
                async fn replace(&self, atms: &[StoredAtm], now: i64) -> Result<(), StoreUnavailable> {
                    async {
                        let mut transaction = SqlDialect::begin_atm_edit(self).await?;
                        sqlx::query(sql().delete_every_atm).execute(&mut *transaction).await.map_err(unavailable)?;
                        <$store as SqlDialect>::write_atms(&mut transaction, atms).await?;
                        sqlx::query(sql().date_atm_set)
                            .bind(now)
                            .execute(&mut *transaction)
                            .await
                            .map_err(unavailable)?;
                        transaction.commit().await.map_err(unavailable)
                    }
                    .instrument(db("REPLACE atms"))
                    .await
                }

                async fn current(&self) -> Result<AtmSet, StoreUnavailable> {
                    ViewSource::atms(self).await
                }

                #[tracing::instrument(skip_all)]
                async fn edit<'a>(
                    &self,
                    plan: &mut EditPlan<'a, AtmSet, AtmSetEdit>,
                    now: i64,
                ) -> Result<(), StoreUnavailable> {
                    let mut transaction = SqlDialect::begin_atm_edit(self).await?;
                    // Read in the transaction that holds the set's lock: what the last
                    // writer committed, and nothing can change it until this one ends.
                    let stored = read_atm_set(&mut transaction).await?;
                    let AtmSetEdit::Apply { upserts, removals } = plan(&stored) else {
                        return transaction.rollback().await.map_err(unavailable);
                    };
                    <$store as SqlDialect>::delete_atms(&mut transaction, &removals).await?;
                    <$store as SqlDialect>::write_atms(&mut transaction, &upserts).await?;
                    sqlx::query(sql().date_atm_set).bind(now).execute(&mut *transaction).await.map_err(unavailable)?;
                    transaction.commit().await.map_err(unavailable)
                }
            }

            #[async_trait]
            impl SigningKeyRecords for $store {
                async fn published(&self, retired_after: i64) -> Result<Vec<SigningKey>, StoreUnavailable> {
                    let found: Vec<rows::SigningKeyRow> = sqlx::query_as(sql().published_keys)
                        .bind(retired_after)
                        .fetch_all(self.pool())
                        .instrument(db("SELECT signing_keys"))
                        .await
                        .map_err(unavailable)?;
                    Ok(found.into_iter().map(rows::signing_key).collect())
                }

                async fn all(&self) -> Result<Vec<SigningKey>, StoreUnavailable> {
                    let found: Vec<rows::SigningKeyRow> =
                        sqlx::query_as(sql().all_keys).fetch_all(self.pool()).await.map_err(unavailable)?;
                    Ok(found.into_iter().map(rows::signing_key).collect())
                }

                async fn schedule(&self, key: &SigningKey, now: i64) -> Result<(), StoreUnavailable> {
                    change_keys(self, None, Some(key), now).await.map(drop)
                }

                async fn revoke(
                    &self,
                    kid: &str,
                    now: i64,
                    replacement: Option<SigningKey>,
                ) -> Result<bool, StoreUnavailable> {
                    change_keys(self, Some(kid), replacement.as_ref(), now).await
                }
            }

            /// Revokes `revoking` and schedules `key`, in one transaction: `false`, and
            /// nothing changed, when `revoking` is not a key still standing.
            async fn change_keys(
                store: &$store,
                revoking: Option<&str>,
                key: Option<&SigningKey>,
                now: i64,
            ) -> Result<bool, StoreUnavailable> {
                let mut transaction = SqlDialect::begin_key_rotation(store).await?;
                if let Some(kid) = revoking {
                    let revoked = sqlx::query(sql().revoke_key)
                        .bind(now)
                        .bind(kid)
                        .execute(&mut *transaction)
                        .await
                        .map_err(unavailable)?
                        .rows_affected();
                    if revoked == 0 {
                        return Ok(false);
                    }
                }
                if let Some(key) = key {
                    // Waiting keys are dropped; revoked ones stay, to be listed.
                    sqlx::query(sql().drop_waiting_keys)
                        .bind(now)
                        .execute(&mut *transaction)
                        .await
                        .map_err(unavailable)?;
                    // The key signing at `now` (its retirement not yet reached: none, or the
                    // activation of a waiting key just dropped) signs until the new one does.
                    sqlx::query(sql().retire_current_key)
                        .bind(key.activates_at)
                        .bind(now)
                        .execute(&mut *transaction)
                        .await
                        .map_err(unavailable)?;
                    sqlx::query(sql().insert_key)
                        .bind(&key.kid)
                        .bind(&key.private_pkcs8)
                        .bind(&key.public_key)
                        .bind(key.created_at)
                        .bind(key.activates_at)
                        .execute(&mut *transaction)
                        .await
                        .map_err(unavailable)?;
                }
                transaction.commit().await.map_err(unavailable)?;
                Ok(true)
            }

            #[async_trait]
            impl KeyVault for $store {
                async fn reseal(&self, kid: &str, from: &[u8], to: &[u8]) -> Result<bool, StoreUnavailable> {
                    let changed = sqlx::query(sql().reseal_key)
                        .bind(to)
                        .bind(kid)
                        .bind(from)
                        .execute(self.pool())
                        .await
                        .map_err(unavailable)?
                        .rows_affected();
                    Ok(changed == 1)
                }

                async fn scrub(&self) -> Result<(), StoreUnavailable> {
                    SqlDialect::scrub(self).await
                }
            }

            #[async_trait]
            impl TokenArchive for $store {
                async fn record(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable> {
                    SqlDialect::record_tokens(self, tokens).instrument(db("INSERT token_records")).await
                }

                async fn find(&self, opaque: &OpaqueToken) -> Result<Option<TokenRecord>, StoreUnavailable> {
                    let found: Option<rows::TokenRow> = sqlx::query_as(sql().find_token)
                        .bind(opaque.as_str())
                        .fetch_optional(self.pool())
                        .instrument(db("SELECT token_records"))
                        .await
                        .map_err(unavailable)?;
                    found.map(rows::token).transpose()
                }

                async fn revoke(&self, token_id: &TokenId, now: i64) -> Result<bool, StoreUnavailable> {
                    async {
                        let mut transaction = SqlDialect::begin_revocation(self).await?;
                        let changed = sqlx::query(sql().revoke_token)
                            .bind(now)
                            .bind(token_id.as_str())
                            .execute(&mut *transaction)
                            .await
                            .map_err(unavailable)?
                            .rows_affected();
                        transaction.commit().await.map_err(unavailable)?;
                        Ok(changed == 1)
                    }
                    .instrument(db("UPDATE token_records"))
                    .await
                }

                async fn revoke_live_of(&self, client_id: &ClientId, now: i64) -> Result<u64, StoreUnavailable> {
                    let mut transaction = SqlDialect::begin_revocation(self).await?;
                    let revoked = sqlx::query(sql().revoke_live_of)
                        .bind(now)
                        .bind(client_id.as_str())
                        .bind(now)
                        .execute(&mut *transaction)
                        .await
                        .map_err(unavailable)?
                        .rows_affected();
                    transaction.commit().await.map_err(unavailable)?;
                    Ok(revoked)
                }

                async fn revoked_live(&self, now: i64) -> Result<Vec<TokenId>, StoreUnavailable> {
                    let found: Vec<(String,)> = sqlx::query_as(sql().revoked_live)
                        .bind(now)
                        .fetch_all(self.pool())
                        .instrument(db("SELECT token_records"))
                        .await
                        .map_err(unavailable)?;
                    Ok(found.into_iter().map(|(jti,)| TokenId::new(jti)).collect())
                }

                async fn live(&self, now: i64) -> Result<Vec<TokenRecord>, StoreUnavailable> {
                    let found: Vec<rows::TokenRow> = sqlx::query_as(sql().live_tokens)
                        .bind(now)
                        .fetch_all(self.pool())
                        .await
                        .map_err(unavailable)?;
                    found.into_iter().map(rows::token).collect()
                }

                async fn purge_expired(&self, before: i64) -> Result<u64, StoreUnavailable> {
                    SqlDialect::purge_expired_tokens(self, before).await
                }
            }
        };
    };
}

pub(crate) use shared_sql_records;
