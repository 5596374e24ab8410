//! Loading the demo data set, only into a store that holds no operator data, and keeping
//! its wait times fresh while the store holds nothing else.

use std::sync::Arc;

use crate::demo::{self, DemoDataInvalid};
use crate::ports::{
    AtmRecords, ChannelRecords, ClientRecords, Clock, ImportKind, ImportLog, StoreInventory, StoreUnavailable,
    WaitTimeRecords,
};
use crate::store_contents::StoreContents;

/// What a first start did about the demo data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoOutcome {
    /// The store was new: the set was loaded.
    Loaded,
    /// The store holds the demo set from an earlier start, and no client but the demo's:
    /// it is used as it is.
    AlreadyLoaded,
    /// The store holds operator data (what kinds): nothing was written.
    Kept(StoreContents),
}

impl DemoOutcome {
    /// Whether the demo's clients can ask for tokens now, so that its walk-through works.
    pub fn demo_is_served(&self) -> bool {
        matches!(self, Self::Loaded | Self::AlreadyLoaded)
    }
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
            let demo_clients = demo_client_ids()?;
            let clients = self.targets.clients.all().await?;
            let only_the_demos = !clients.is_empty() && clients.iter().all(|c| demo_clients.contains(&c.client_id));
            return Ok(if only_the_demos { DemoOutcome::AlreadyLoaded } else { DemoOutcome::Kept(contents) });
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

/// The demo set's client ids.
fn demo_client_ids() -> Result<Vec<crate::client::ClientId>, DemoDataInvalid> {
    Ok(demo::clients()?.into_iter().map(|client| client.client_id).collect())
}

/// How often the demo feed re-estimates the demo branches at most: every 5 minutes, or
/// twice within the maximum age of estimates when that is shorter.
pub fn demo_feed_interval(max_age: std::time::Duration) -> std::time::Duration {
    (max_age / 2).clamp(std::time::Duration::from_secs(1), std::time::Duration::from_secs(300))
}

/// The demo's stand-in for a bank's wait-time feed: while the store holds the demo data
/// set and nothing of an operator's, it dates the demo branches' estimates now again,
/// so that the demo keeps answering for as long as it runs, and after a restart days
/// later, under the maximum age that protects a real deployment from stale estimates.
pub struct DemoFeed {
    clients: Arc<dyn ClientRecords>,
    wait_times: Arc<dyn WaitTimeRecords>,
    imports: Arc<dyn ImportLog>,
    clock: Arc<dyn Clock>,
}

impl DemoFeed {
    /// A feed reading `clients` and `imports` to tell a demo store, and writing
    /// `wait_times`, dated by `clock`.
    pub fn new(
        clients: Arc<dyn ClientRecords>,
        wait_times: Arc<dyn WaitTimeRecords>,
        imports: Arc<dyn ImportLog>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self { clients, wait_times, imports, clock }
    }

    /// Dates the demo estimates now, if the store still holds them as the demo wrote
    /// them: no client but the demo's, no wait-time import ever recorded, and exactly the
    /// demo branches with the demo waits, all estimated at one moment. Anything an
    /// operator or a bank's system wrote breaks one of these, and the feed then leaves
    /// the store alone. Whether it wrote.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the store cannot be read or written.
    pub async fn refresh(&self) -> Result<bool, StoreUnavailable> {
        let demo_clients = demo_client_ids().map_err(|e| StoreUnavailable::new(e.to_string()))?;
        if !self.clients.all().await?.iter().all(|client| demo_clients.contains(&client.client_id)) {
            return Ok(false);
        }
        if self.imports.tally().await?.iter().any(|tally| tally.kind == ImportKind::WaitTimes) {
            return Ok(false);
        }
        if !demo::is_demo_wait_times(&self.wait_times.all().await?) {
            return Ok(false);
        }
        self.wait_times.upsert(&demo::wait_times(self.clock.unix_now())).await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{
        ImportOutcome, ImportTally, MockAtmRecords, MockChannelRecords, MockClientRecords, MockImportLog,
        MockStoreInventory, MockWaitTimeRecords,
    };
    use crate::testing::clock_at;

    /// A store holding `contents`, among them the clients `held`; `writes` is how many
    /// times the demo set must be written.
    fn targets(contents: StoreContents, held: Vec<crate::client::ClientRegistration>, writes: usize) -> DemoTargets {
        let mut inventory = MockStoreInventory::new();
        inventory.expect_contents().returning(move || Ok(contents));
        let mut clients = MockClientRecords::new();
        clients.expect_all().returning(move || Ok(held.clone()));
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
        let outcome = DemoData::new(targets(StoreContents::default(), vec![], 1), Arc::new(clock_at(42)));
        assert_eq!(outcome.load_into_new_store().await.unwrap(), DemoOutcome::Loaded);
    }

    #[tokio::test]
    async fn a_store_with_only_operator_atms_gets_nothing() {
        let held = StoreContents { atms: true, ..StoreContents::default() };
        let outcome = DemoData::new(targets(held, vec![], 0), Arc::new(clock_at(42)));
        let outcome = outcome.load_into_new_store().await.unwrap();
        assert_eq!(outcome, DemoOutcome::Kept(held));
        assert!(!outcome.demo_is_served());
    }

    /// The finding: a second start of an untouched demo store said "the store holds
    /// operator data: the demo data set is not loaded", then printed the demo's
    /// walk-through anyway. It is the demo set, and it is served as it is.
    #[tokio::test]
    async fn a_store_that_holds_the_demo_set_from_an_earlier_start_is_used_as_it_is() {
        let held = StoreContents {
            clients: true,
            supported_channels: true,
            wait_times: true,
            atms: true,
            token_records: true,
        };
        let again = DemoData::new(targets(held, demo::clients().unwrap(), 0), Arc::new(clock_at(42)));
        let outcome = again.load_into_new_store().await.unwrap();
        assert_eq!(outcome, DemoOutcome::AlreadyLoaded);
        assert!(outcome.demo_is_served());
        let mut with_an_operators = demo::clients().unwrap();
        with_an_operators.push(crate::testing::registration("bank-app"));
        let operated = DemoData::new(targets(held, with_an_operators, 0), Arc::new(clock_at(42)));
        assert_eq!(operated.load_into_new_store().await.unwrap(), DemoOutcome::Kept(held));
    }

    /// A demo feed over a store holding `clients`, the wait times `rows` and the import
    /// `tallies`; `writes` is how many times it must write.
    fn feed(
        clients: Vec<crate::client::ClientRegistration>,
        rows: Vec<crate::branch::WaitTimeEstimate>,
        tallies: Vec<ImportTally>,
        writes: usize,
    ) -> DemoFeed {
        let mut client_records = MockClientRecords::new();
        client_records.expect_all().returning(move || Ok(clients.clone()));
        let mut imports = MockImportLog::new();
        imports.expect_tally().returning(move || Ok(tallies.clone()));
        let mut wait_times = MockWaitTimeRecords::new();
        wait_times.expect_all().returning(move || Ok(rows.clone()));
        wait_times
            .expect_upsert()
            .withf(|rows| rows.len() == 300 && rows.iter().all(|row| row.estimated_at == 5_000))
            .times(writes)
            .returning(|_| Ok(()));
        DemoFeed::new(Arc::new(client_records), Arc::new(wait_times), Arc::new(imports), Arc::new(clock_at(5_000)))
    }

    #[tokio::test]
    async fn the_demo_set_as_the_demo_wrote_it_is_dated_now_again() {
        let demo = feed(demo::clients().unwrap(), demo::wait_times(42), vec![], 1);
        assert!(demo.refresh().await.unwrap());
    }

    #[tokio::test]
    async fn anything_an_operator_or_a_feed_wrote_stops_the_demo_feed() {
        let mut other_wait = demo::wait_times(42);
        other_wait[7].estimate.wait = crate::branch::WaitTime::from_minutes(59).unwrap();
        let mut other_time = demo::wait_times(42);
        other_time[0].estimated_at = 43;
        let mut more = demo::wait_times(42);
        more.push(crate::branch::WaitTimeEstimate {
            estimate: crate::branch::BranchWaitTime {
                branch: crate::branch::BranchId::parse("00301").unwrap(),
                wait: crate::branch::WaitTime::from_minutes(3).unwrap(),
            },
            estimated_at: 42,
        });
        let mut clients = demo::clients().unwrap();
        clients.push(crate::testing::registration("bank-app"));
        let imported =
            ImportTally { kind: ImportKind::WaitTimes, outcome: ImportOutcome::Applied, runs: 1, last_at: 1 };
        for (what, demo) in [
            ("a wait changed", feed(demo::clients().unwrap(), other_wait, vec![], 0)),
            ("an estimate dated otherwise", feed(demo::clients().unwrap(), other_time, vec![], 0)),
            ("another branch", feed(demo::clients().unwrap(), more, vec![], 0)),
            ("no wait times", feed(demo::clients().unwrap(), vec![], vec![], 0)),
            ("an operator's client", feed(clients, demo::wait_times(42), vec![], 0)),
            ("a wait-time import", feed(demo::clients().unwrap(), demo::wait_times(42), vec![imported], 0)),
        ] {
            assert!(!demo.refresh().await.unwrap(), "{what}");
        }
    }
}
