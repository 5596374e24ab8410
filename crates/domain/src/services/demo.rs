//! Loading the demo data set, only into a store that holds no operator data.

use std::sync::Arc;

use crate::demo::{self, DemoDataInvalid};
use crate::ports::{
    AtmRecords, ChannelRecords, ClientRecords, Clock, StoreInventory, StoreUnavailable, WaitTimeRecords,
};
use crate::store_contents::StoreContents;

/// What a first start did about the demo data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoOutcome {
    /// The store was new: the set was loaded.
    Loaded,
    /// The store holds operator data (what kinds): nothing was written.
    Kept(StoreContents),
}

/// Why the demo data set was not loaded.
#[derive(Debug, thiserror::Error)]
pub enum DemoLoadError {
    /// The set itself does not validate (a bug).
    #[error(transparent)]
    Invalid(#[from] DemoDataInvalid),
    /// The store could not be read or written.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// The stores the demo set is written to.
pub struct DemoTargets {
    /// Tells a new store from one in use.
    pub inventory: Arc<dyn StoreInventory>,
    /// Demo clients.
    pub clients: Arc<dyn ClientRecords>,
    /// Their channels.
    pub channels: Arc<dyn ChannelRecords>,
    /// Demo wait times.
    pub wait_times: Arc<dyn WaitTimeRecords>,
    /// Demo ATMs.
    pub atms: Arc<dyn AtmRecords>,
}

/// Loads the demo data set where the rule allows.
pub struct DemoData {
    targets: DemoTargets,
    clock: Arc<dyn Clock>,
}

impl DemoData {
    /// Loads into `targets`, dated by `clock`.
    pub fn new(targets: DemoTargets, clock: Arc<dyn Clock>) -> Self {
        Self { targets, clock }
    }

    /// Loads the set if the store holds no operator data of any kind
    /// ([`StoreContents::takes_demo_data`]).
    ///
    /// # Errors
    /// See [`DemoLoadError`].
    pub async fn load_into_new_store(&self) -> Result<DemoOutcome, DemoLoadError> {
        let contents = self.targets.inventory.contents().await?;
        if !contents.takes_demo_data() {
            return Ok(DemoOutcome::Kept(contents));
        }
        let now = self.clock.unix_now();
        for client in demo::clients()? {
            self.targets.clients.insert(&client, now).await?;
            self.targets.channels.allow(&client.scope).await?;
        }
        self.targets.wait_times.upsert(&demo::wait_times(now)).await?;
        self.targets.atms.replace(&demo::atms()?, now).await?;
        Ok(DemoOutcome::Loaded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{
        MockAtmRecords, MockChannelRecords, MockClientRecords, MockStoreInventory, MockWaitTimeRecords,
    };
    use crate::testing::clock_at;

    fn targets(contents: StoreContents, writes: usize) -> DemoTargets {
        let mut inventory = MockStoreInventory::new();
        inventory.expect_contents().returning(move || Ok(contents));
        let mut clients = MockClientRecords::new();
        clients.expect_insert().times(2 * writes).returning(|_, _| Ok(true));
        let mut channels = MockChannelRecords::new();
        channels.expect_allow().times(2 * writes).returning(|_| Ok(true));
        let mut wait_times = MockWaitTimeRecords::new();
        wait_times.expect_upsert().withf(|rows| rows.len() == 300).times(writes).returning(|_| Ok(()));
        let mut atms = MockAtmRecords::new();
        atms.expect_replace()
            .withf(|atms, now| atms.len() == 1_200 && *now == 42)
            .times(writes)
            .returning(|_, _| Ok(()));
        DemoTargets {
            inventory: Arc::new(inventory),
            clients: Arc::new(clients),
            channels: Arc::new(channels),
            wait_times: Arc::new(wait_times),
            atms: Arc::new(atms),
        }
    }

    #[tokio::test]
    async fn a_new_store_gets_the_whole_demo_set() {
        let outcome = DemoData::new(targets(StoreContents::default(), 1), Arc::new(clock_at(42)));
        assert_eq!(outcome.load_into_new_store().await.unwrap(), DemoOutcome::Loaded);
    }

    #[tokio::test]
    async fn a_store_with_only_operator_atms_gets_nothing() {
        let held = StoreContents { atms: true, ..StoreContents::default() };
        let outcome = DemoData::new(targets(held, 0), Arc::new(clock_at(42)));
        assert_eq!(outcome.load_into_new_store().await.unwrap(), DemoOutcome::Kept(held));
    }
}
