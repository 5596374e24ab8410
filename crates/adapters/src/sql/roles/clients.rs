//! `ClientRecords` of every SQL store: client registrations.

use async_trait::async_trait;
use domain::client::{ClientChanges, ClientId, ClientRegistration, ClientStatus};
use domain::dpop::DpopPolicy;
use domain::ports::{ClientRecords, StoreUnavailable};
use sqlx::{Encode, Executor, FromRow, Type};
use tracing::Instrument as _;

use super::{db, inserted};
use crate::rows;
use crate::sql::{Connection, Db, Row, RowsAffected as _, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> ClientRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> Option<&'q str>: Encode<'q, Db<D>>,
    String: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    Option<String>: for<'q> Encode<'q, Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    rows::ClientRow: for<'r> FromRow<'r, Row<D>>,
{
    async fn insert(&self, client: &ClientRegistration, now: i64) -> Result<bool, StoreUnavailable> {
        self.retrying("INSERT clients", move || async move {
            let done = sqlx::query(self.sql.insert_client)
                .bind(client.client_id.as_str())
                .bind(client.scope.country.as_str())
                .bind(client.scope.business.as_str())
                .bind(client.scope.channel.as_str())
                .bind(rows::redirect_uris_text(&client.redirect_uris)?)
                .bind(rows::origins_text(&client.allowed_origins)?)
                .bind(rows::status_text(client.status))
                .bind(client.dpop.as_str())
                .bind(now)
                .execute(self.dialect.pool())
                .await;
            inserted::<D>(done)
        })
        .await
    }

    async fn all(&self) -> Result<Vec<ClientRegistration>, StoreUnavailable> {
        let found: Vec<rows::ClientRow> = sqlx::query_as(self.sql.clients)
            .fetch_all(self.dialect.pool())
            .instrument(db::<D>("SELECT clients"))
            .await
            .map_err(unavailable::<D>)?;
        found.into_iter().map(rows::client).collect()
    }

    async fn set_status(&self, client_id: &ClientId, status: ClientStatus) -> Result<bool, StoreUnavailable> {
        let found = self
            .retrying("UPDATE clients", move || async move {
                sqlx::query(self.sql.set_client_status)
                    .bind(rows::status_text(status))
                    .bind(client_id.as_str())
                    .execute(self.dialect.pool())
                    .await
                    .map_err(unavailable::<D>)
            })
            .await?
            .rows_affected();
        Ok(found == 1)
    }

    async fn change(&self, client_id: &ClientId, addresses: &ClientChanges) -> Result<bool, StoreUnavailable> {
        let uris = addresses.redirect_uris.as_deref().map(rows::redirect_uris_text).transpose()?;
        let origins = addresses.allowed_origins.as_deref().map(rows::origins_text).transpose()?;
        let (uris, origins) = (&uris, &origins);
        let found = self
            .retrying("UPDATE clients", move || async move {
                sqlx::query(self.sql.change_client)
                    .bind(uris.clone())
                    .bind(origins.clone())
                    .bind(addresses.dpop.map(DpopPolicy::as_str))
                    .bind(client_id.as_str())
                    .execute(self.dialect.pool())
                    .await
                    .map_err(unavailable::<D>)
            })
            .await?
            .rows_affected();
        Ok(found == 1)
    }
}
