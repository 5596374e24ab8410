//! `ImportLog` of every SQL store: import runs counted by kind and outcome.

use async_trait::async_trait;
use domain::ports::{ImportKind, ImportLog, ImportOutcome, ImportTally, StoreUnavailable};
use sqlx::{Encode, Executor, FromRow, Type};

use crate::rows;
use crate::sql::{Connection, Db, Row, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> ImportLog for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    rows::ImportRunRow: for<'r> FromRow<'r, Row<D>>,
{
    async fn record(&self, kind: ImportKind, outcome: ImportOutcome, at: i64) -> Result<(), StoreUnavailable> {
        // The last time never moves back (a host whose clock is behind).
        self.retrying("INSERT import_runs", move || async move {
            sqlx::query(self.sql.record_import)
                .bind(kind.label())
                .bind(outcome.label())
                .bind(at)
                .execute(self.dialect.pool())
                .await
                .map_err(unavailable::<D>)
        })
        .await?;
        Ok(())
    }

    async fn tally(&self) -> Result<Vec<ImportTally>, StoreUnavailable> {
        let rows: Vec<rows::ImportRunRow> =
            sqlx::query_as(self.sql.import_tally).fetch_all(self.dialect.pool()).await.map_err(unavailable::<D>)?;
        Ok(rows::import_tally(rows))
    }
}
