//! `ChannelRecords` of every SQL store: the supported channel combinations.

use async_trait::async_trait;
use domain::client::ChannelScope;
use domain::ports::{ChannelRecords, StoreUnavailable};
use sqlx::{Encode, Executor, FromRow, Type};
use tracing::Instrument as _;

use super::{db, inserted};
use crate::rows;
use crate::sql::{Connection, Db, Row, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> ChannelRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    (String, String, String): for<'r> FromRow<'r, Row<D>>,
{
    async fn allow(&self, scope: &ChannelScope) -> Result<bool, StoreUnavailable> {
        self.retrying("INSERT channels", move || async move {
            let done = sqlx::query(self.sql.allow_channel)
                .bind(scope.country.as_str())
                .bind(scope.business.as_str())
                .bind(scope.channel.as_str())
                .execute(self.dialect.pool())
                .await;
            inserted::<D>(done)
        })
        .await
    }

    async fn all(&self) -> Result<Vec<ChannelScope>, StoreUnavailable> {
        let found: Vec<(String, String, String)> = sqlx::query_as(self.sql.channels)
            .fetch_all(self.dialect.pool())
            .instrument(db::<D>("SELECT channels"))
            .await
            .map_err(unavailable::<D>)?;
        found.iter().map(|(country, business, channel)| rows::scope(country, business, channel)).collect()
    }
}
