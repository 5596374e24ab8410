//! `StoreLifecycle` of every SQL store: its migrations, whether it answers, its upkeep.

use async_trait::async_trait;
use domain::ports::StoreUnavailable;
use sqlx::Executor;

use crate::sql::{Connection, Db, SqlDialect, SqlStore, migrations, unavailable};
use crate::store::StoreLifecycle;

#[async_trait]
impl<D: SqlDialect> StoreLifecycle for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
{
    /// Runs `migrations/<D::MIGRATIONS>`.
    #[tracing::instrument(skip(self))]
    async fn migrate(&self) -> Result<(), StoreUnavailable> {
        migrations::of(D::MIGRATIONS)?.run(self.dialect.pool()).await.map_err(StoreUnavailable::new)
    }

    async fn ping(&self) -> Result<(), StoreUnavailable> {
        sqlx::query(self.sql.ping).fetch_optional(self.dialect.pool()).await.map(drop).map_err(unavailable::<D>)
    }

    async fn prepare(&self, now: i64) -> Result<(), StoreUnavailable> {
        self.dialect.prepare(now).await
    }

    async fn close(&self) {
        self.dialect.pool().close().await;
    }
}
