//! Loading the bank's data: wait-time estimates and the ATM set, as banks' feeds really
//! come. A feed is compared with what is stored first: an identical one writes nothing
//! (its dates and ETags stay), a changed one is applied as a diff, and an ATM feed that
//! would remove most of the set (a cut feed, an empty one, one dated 1970) is refused
//! unless the operator says it is meant.

use std::collections::HashMap;
use std::sync::Arc;

use crate::atm_catalog::StoredAtm;
use crate::atm_closure::AtmClosure;
use crate::branch::{BranchId, WaitTimeEstimate};
use crate::ports::{
    AtmKey, AtmRecords, AtmSetEdit, AtmSetRecord, Clock, ImportKind, ImportLog, ImportOutcome, StoreUnavailable,
    WaitTimeRecords,
};

/// 2000-01-01T00:00:00Z: an ATM feed dated before it is a placeholder date (the
/// 1970-01-01 of an empty feed), not a publication.
pub const OLDEST_PLAUSIBLE_FEED: i64 = 946_684_800;

/// An ATM feed as read from a file: its records in stored form, and the date its
/// publisher gave it (`meta.LastUpdated`), if any.
#[derive(Debug, Clone, Default)]
pub struct AtmFeed {
    /// The ATMs, validated.
    pub atms: Vec<StoredAtm>,
    /// The publisher's `LastUpdated`, seconds since the Unix epoch.
    pub published: Option<i64>,
}

/// What an import may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportRules {
    /// The largest share of the stored ATMs, in percent, an import may remove without
    /// `allow_shrink`.
    pub max_shrink_percent: u8,
    /// Apply a feed that the shrink guard would refuse.
    pub allow_shrink: bool,
    /// Compare only; write nothing.
    pub dry_run: bool,
}

impl Default for ImportRules {
    fn default() -> Self {
        Self { max_shrink_percent: 10, allow_shrink: false, dry_run: false }
    }
}

/// How a new ATM set differs from the stored one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AtmSetChanges {
    /// ATMs stored now.
    pub current: usize,
    /// ATMs in the new set.
    pub new: usize,
    /// In the new set only, in its order.
    pub added: Vec<AtmKey>,
    /// Stored but not in the new set, in stored order.
    pub removed: Vec<AtmKey>,
    /// In both, with another record.
    pub changed: Vec<AtmKey>,
}

impl AtmSetChanges {
    /// How `new` differs from `current`, whatever the order of either: ATMs are matched
    /// by brand and identification and compared record for record.
    pub fn between(current: &[StoredAtm], new: &[StoredAtm]) -> Self {
        let stored: HashMap<(&str, &str), &StoredAtm> =
            current.iter().map(|atm| ((atm.brand.as_str(), atm.identification.as_str()), atm)).collect();
        let mut changes = Self { current: current.len(), new: new.len(), ..Self::default() };
        let mut kept = std::collections::HashSet::with_capacity(new.len());
        for atm in new {
            let key = (atm.brand.as_str(), atm.identification.as_str());
            kept.insert(key);
            match stored.get(&key) {
                None => changes.added.push(owned(key)),
                Some(old) if *old != atm => changes.changed.push(owned(key)),
                Some(_) => {}
            }
        }
        changes.removed = current
            .iter()
            .map(|atm| (atm.brand.as_str(), atm.identification.as_str()))
            .filter(|key| !kept.contains(key))
            .map(owned)
            .collect();
        changes
    }

    /// Whether the new set is the stored one, record for record.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

fn owned((brand, identification): (&str, &str)) -> AtmKey {
    (brand.to_owned(), identification.to_owned())
}

/// Why the shrink guard refused an ATM feed. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShrinkRefusal {
    /// It would remove more of the stored set than the rules allow.
    #[error(
        "the feed would remove {removed} of the {current} ATMs stored ({percent} %, more than {allowed} %), \
         leaving {new}; give --allow-shrink if that is meant"
    )]
    Shrinks {
        /// ATMs stored.
        current: usize,
        /// ATMs in the feed.
        new: usize,
        /// ATMs it would remove.
        removed: usize,
        /// That share of the stored set, rounded up.
        percent: usize,
        /// The share allowed.
        allowed: u8,
    },
    /// It would leave no ATM at all.
    #[error("the feed holds no ATM and would remove all {current} stored; give --allow-shrink if that is meant")]
    Empties {
        /// ATMs stored.
        current: usize,
    },
    /// Its publisher dated it before 2000: a placeholder, as empty feeds carry.
    #[error("the feed is dated {published} (before 2000), as broken feeds are; give --allow-shrink if it is meant")]
    Outdated {
        /// Its `LastUpdated`, seconds since the Unix epoch.
        published: i64,
    },
    /// It would drop an ATM whose announced closure is still to come: an ATM does not
    /// vanish before its date. `--allow-shrink` does not override this.
    #[error(
        "the feed drops ATM {atm}{}, whose closure is announced for {closes_on}: an ATM stays until its date; \
         cancel the closure first (`atms closure {atm} --cancel`) if it is gone sooner",
        if *others > 0 { format!(" (and {others} more closing ATMs)") } else { String::new() }
    )]
    Closing {
        /// The first such ATM's identification.
        atm: String,
        /// Its closure's date.
        closes_on: time::Date,
        /// How many more the feed drops.
        others: usize,
    },
}

/// Why ATMs were not imported; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ImportAtmsError {
    /// The shrink guard refused the feed.
    #[error(transparent)]
    Refused(#[from] ShrinkRefusal),
    /// The store could not be read or written.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// What an ATM import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtmImport {
    /// The feed is the stored set: nothing was written, its date and ETags stay.
    Unchanged {
        /// ATMs in the set.
        atms: usize,
    },
    /// The feed was applied as these changes, in one transaction.
    Applied(AtmSetChanges),
    /// A dry run: what the feed would change, and whether the guard would refuse it.
    Planned {
        /// What it would change.
        changes: AtmSetChanges,
        /// Why it would be refused, if it would.
        refusal: Option<ShrinkRefusal>,
    },
}

/// What a wait-time import did (or, in a dry run, would do).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitTimeChanges {
    /// Branches not stored before.
    pub added: usize,
    /// Branches whose estimate or its time changed.
    pub changed: usize,
    /// Branches given exactly as stored.
    pub unchanged: usize,
    /// Nothing was written (a dry run, or nothing to change).
    pub written: bool,
}

/// Why wait times were not imported; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ImportWaitTimesError {
    /// A branch is given twice: which one would win is anyone's guess, so neither does.
    /// Positions count from 0 in the order given.
    #[error("branch {branch} is given twice (at {first} and {again})")]
    DuplicateBranch {
        /// The branch.
        branch: BranchId,
        /// Where it was first given.
        first: usize,
        /// Where it was given again.
        again: usize,
    },
    /// The store could not be written.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// Imports of the bank's data. Every import that is not a dry run is counted in the
/// store's [`ImportLog`] by its outcome.
pub struct DataImport {
    wait_times: Arc<dyn WaitTimeRecords>,
    atms: Arc<dyn AtmRecords>,
    log: Arc<dyn ImportLog>,
    clock: Arc<dyn Clock>,
}

impl DataImport {
    /// Imports into `wait_times` and `atms`, counted in `log`, dated by `clock`.
    pub fn new(
        wait_times: Arc<dyn WaitTimeRecords>,
        atms: Arc<dyn AtmRecords>,
        log: Arc<dyn ImportLog>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self { wait_times, atms, log, clock }
    }

    /// Counts an import of `kind` whose file was refused before it reached the store
    /// (unreadable, or invalid), as [`ImportOutcome::Invalid`].
    pub async fn invalid_file(&self, kind: ImportKind) {
        self.count(kind, ImportOutcome::Invalid).await;
    }

    /// Counts one import; one that cannot be counted is logged, never failed (its data
    /// is written, or not, already).
    async fn count(&self, kind: ImportKind, outcome: ImportOutcome) {
        if let Err(error) = self.log.record(kind, outcome, self.clock.unix_now()).await {
            tracing::warn!(%error, kind = kind.label(), outcome = outcome.label(), "an import could not be counted");
        }
    }

    /// Inserts or replaces `estimates`, all or none; other branches keep theirs. Only
    /// the branches whose estimate (or its time) differs from the stored one are written;
    /// when none does, nothing is.
    ///
    /// # Errors
    /// See [`ImportWaitTimesError`].
    pub async fn wait_times(
        &self,
        estimates: &[WaitTimeEstimate],
        dry_run: bool,
    ) -> Result<WaitTimeChanges, ImportWaitTimesError> {
        let result = self.compare_wait_times(estimates, dry_run).await;
        if !dry_run {
            let outcome = match &result {
                Ok(changes) if changes.written => ImportOutcome::Applied,
                Ok(_) => ImportOutcome::Unchanged,
                Err(ImportWaitTimesError::DuplicateBranch { .. }) => ImportOutcome::Invalid,
                Err(ImportWaitTimesError::Unavailable(_)) => ImportOutcome::Failed,
            };
            self.count(ImportKind::WaitTimes, outcome).await;
        }
        result
    }

    async fn compare_wait_times(
        &self,
        estimates: &[WaitTimeEstimate],
        dry_run: bool,
    ) -> Result<WaitTimeChanges, ImportWaitTimesError> {
        let mut seen = HashMap::with_capacity(estimates.len());
        for (again, row) in estimates.iter().enumerate() {
            if let Some(first) = seen.insert(row.estimate.branch, again) {
                return Err(ImportWaitTimesError::DuplicateBranch { branch: row.estimate.branch, first, again });
            }
        }
        if dry_run {
            return Ok(wait_time_changes(&self.wait_times.all().await?, estimates).0);
        }
        // Compared with the estimates as stored when the store writes, under its lock:
        // two imports at once write one after the other, each judged against what the
        // other left (they had been compared with the same old rows, and their writes
        // mixed into values no order of the files gives).
        let mut changes = WaitTimeChanges::default();
        self.wait_times
            .edit(&mut |stored| {
                let (found, writes) = wait_time_changes(stored, estimates);
                changes = WaitTimeChanges { written: !writes.is_empty(), ..found };
                writes
            })
            .await?;
        Ok(changes)
    }

    /// The stored ATM set, for an export.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it cannot be read.
    pub async fn current_atms(&self) -> Result<AtmSetRecord, StoreUnavailable> {
        self.atms.current().await
    }

    /// Imports an ATM feed as the whole ATM set. `feed` comes validated and in stored
    /// form from the file's reader at the edge, which also refuses an identification
    /// given twice within a brand; it is never validated again. The feed is compared
    /// with the stored set: identical, nothing is written (the set keeps its date, so
    /// ETags and `Last-Modified` do not move); else the shrink guard looks at it, and the
    /// differences are applied in one transaction, dated now.
    ///
    /// # Errors
    /// [`ImportAtmsError::Refused`] by the shrink guard (unless `rules.allow_shrink`),
    /// [`ImportAtmsError::Unavailable`] when the store could not be read or written; in
    /// both cases nothing changed.
    pub async fn atms(&self, feed: &AtmFeed, rules: ImportRules) -> Result<AtmImport, ImportAtmsError> {
        let result = self.compare_atms(feed, rules).await;
        let outcome = match &result {
            _ if rules.dry_run => None,
            Ok(AtmImport::Planned { .. }) => None,
            Ok(AtmImport::Unchanged { .. }) => Some(ImportOutcome::Unchanged),
            Ok(AtmImport::Applied(_)) => Some(ImportOutcome::Applied),
            Err(ImportAtmsError::Refused(_)) => Some(ImportOutcome::Refused),
            Err(ImportAtmsError::Unavailable(_)) => Some(ImportOutcome::Failed),
        };
        if let Some(outcome) = outcome {
            self.count(ImportKind::Atms, outcome).await;
        }
        result
    }

    async fn compare_atms(&self, feed: &AtmFeed, rules: ImportRules) -> Result<AtmImport, ImportAtmsError> {
        let now = self.clock.unix_now();
        if rules.dry_run {
            let (changes, refusal) = judge(&self.atms.current().await?, feed, rules, now);
            return Ok(AtmImport::Planned { changes, refusal });
        }
        // Compared, and judged by the shrink guard, against the set as stored when the
        // store writes, under its lock: two imports at once apply one after the other,
        // the second judged against what the first left (both had been compared with the
        // same old set, and together removed what neither was allowed to).
        let mut decided = None;
        self.atms
            .edit(
                &mut |stored| {
                    let (outcome, edit) = plan_atm_import(stored, feed, rules, now);
                    decided = Some(outcome);
                    edit
                },
                now,
            )
            .await?;
        decided.unwrap_or_else(|| {
            Err(StoreUnavailable::new("the store ended its edit without reading the ATM set").into())
        })
    }
}

/// How `feed` differs from the `stored` set, and whether a guard refuses it at `now`:
/// the closure guard first (nothing overrides it), then the shrink guard.
fn judge(
    stored: &AtmSetRecord,
    feed: &AtmFeed,
    rules: ImportRules,
    now: i64,
) -> (AtmSetChanges, Option<ShrinkRefusal>) {
    let changes = AtmSetChanges::between(&stored.atms, &feed.atms);
    let refusal =
        closure_guard(&changes, &stored.closures, feed, now).or_else(|| shrink_guard(&changes, feed.published, rules));
    (changes, refusal)
}

/// Whether `changes` drop every ATM of an identification whose closure is still to
/// come at `now`.
fn closure_guard(changes: &AtmSetChanges, closures: &[AtmClosure], feed: &AtmFeed, now: i64) -> Option<ShrinkRefusal> {
    if changes.removed.is_empty() || closures.is_empty() {
        return None;
    }
    let kept: std::collections::HashSet<&str> = feed.atms.iter().map(|atm| atm.identification.as_str()).collect();
    let dropped: std::collections::BTreeSet<&str> =
        changes.removed.iter().map(|(_, id)| id.as_str()).filter(|id| !kept.contains(id)).collect();
    let mut closing = closures.iter().filter(|c| !c.in_effect(now) && dropped.contains(c.atm.as_str()));
    let first = closing.next()?;
    Some(ShrinkRefusal::Closing { atm: first.atm.to_string(), closes_on: first.closes_on, others: closing.count() })
}

/// What importing `feed` makes of the `stored` set at `now`, and the edit that does it.
fn plan_atm_import(
    stored: &AtmSetRecord,
    feed: &AtmFeed,
    rules: ImportRules,
    now: i64,
) -> (Result<AtmImport, ImportAtmsError>, AtmSetEdit) {
    let (changes, refusal) = judge(stored, feed, rules, now);
    if changes.is_empty() {
        return (Ok(AtmImport::Unchanged { atms: changes.new }), AtmSetEdit::Keep);
    }
    if let Some(refusal) = refusal {
        return (Err(refusal.into()), AtmSetEdit::Keep);
    }
    let touched: std::collections::HashSet<(&str, &str)> =
        changes.added.iter().chain(&changes.changed).map(|(b, i)| (b.as_str(), i.as_str())).collect();
    let upserts = (feed.atms.iter())
        .filter(|atm| touched.contains(&(atm.brand.as_str(), atm.identification.as_str())))
        .cloned()
        .collect();
    let edit = AtmSetEdit::Apply { upserts, removals: changes.removed.clone() };
    (Ok(AtmImport::Applied(changes)), edit)
}

/// How `estimates` differ from the `stored` ones, and the rows to write: those not
/// stored, or stored with another estimate or time.
fn wait_time_changes(
    stored: &[WaitTimeEstimate],
    estimates: &[WaitTimeEstimate],
) -> (WaitTimeChanges, Vec<WaitTimeEstimate>) {
    let stored: HashMap<BranchId, &WaitTimeEstimate> = stored.iter().map(|row| (row.estimate.branch, row)).collect();
    let mut changes = WaitTimeChanges::default();
    let mut writes = Vec::new();
    for row in estimates {
        match stored.get(&row.estimate.branch) {
            None => changes.added += 1,
            Some(old) if *old != row => changes.changed += 1,
            Some(_) => {
                changes.unchanged += 1;
                continue;
            }
        }
        writes.push(*row);
    }
    (changes, writes)
}

/// Whether the shrink guard refuses a feed making `changes`, dated `published`.
fn shrink_guard(changes: &AtmSetChanges, published: Option<i64>, rules: ImportRules) -> Option<ShrinkRefusal> {
    if rules.allow_shrink || changes.is_empty() {
        return None;
    }
    if let Some(published) = published.filter(|at| *at < OLDEST_PLAUSIBLE_FEED) {
        return Some(ShrinkRefusal::Outdated { published });
    }
    if changes.new == 0 && changes.current > 0 {
        return Some(ShrinkRefusal::Empties { current: changes.current });
    }
    let removed = changes.removed.len();
    // removed / current > max %, in integers: no rounding lets a feed through.
    if changes.current > 0 && removed * 100 > changes.current * usize::from(rules.max_shrink_percent) {
        return Some(ShrinkRefusal::Shrinks {
            current: changes.current,
            new: changes.new,
            removed,
            percent: (removed * 100).div_ceil(changes.current),
            allowed: rules.max_shrink_percent,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::branch::{BranchWaitTime, WaitTime};
    use crate::ports::{MockAtmRecords, MockImportLog, MockWaitTimeRecords};
    use crate::testing::clock_at;

    fn estimate(branch: &str, minutes: u32, at: i64) -> WaitTimeEstimate {
        WaitTimeEstimate {
            estimate: BranchWaitTime {
                branch: BranchId::parse(branch).unwrap(),
                wait: WaitTime::from_minutes(minutes).unwrap(),
            },
            estimated_at: at,
        }
    }

    fn atm(brand: &str, id: &str, note: &str) -> StoredAtm {
        let record = serde_json::json!({"Identification": id, "Note": [note]});
        crate::testing::stored_atm(brand, &record)
    }

    /// The edits a store was asked to write, with their dates.
    type Written = Arc<std::sync::Mutex<Vec<(AtmSetEdit, i64)>>>;

    /// A store holding `set`: read as it is, and edited by calling the plan on it; the
    /// edits that write something are kept in the second value.
    fn atms_stored(set: Vec<StoredAtm>) -> (MockAtmRecords, Written) {
        atms_closing(set, Vec::new())
    }

    /// As [`atms_stored`], with `closures` announced.
    fn atms_closing(set: Vec<StoredAtm>, closures: Vec<AtmClosure>) -> (MockAtmRecords, Written) {
        let mut atms = MockAtmRecords::new();
        let stored = AtmSetRecord { atms: set, last_updated: 1, closures, feed_head: 0 };
        let read = stored.clone();
        atms.expect_current().returning(move || Ok(read.clone()));
        let written = Written::default();
        let kept = Arc::clone(&written);
        atms.expect_edit().returning(move |plan, now| {
            let edit = plan(&stored);
            if edit != AtmSetEdit::Keep {
                kept.lock().unwrap().push((edit, now));
            }
            Ok(())
        });
        (atms, written)
    }

    fn importing(atms: MockAtmRecords) -> DataImport {
        DataImport::new(Arc::new(MockWaitTimeRecords::new()), Arc::new(atms), counted(), Arc::new(clock_at(1_234)))
    }

    /// An import log that takes every count.
    fn counted() -> Arc<MockImportLog> {
        let mut log = MockImportLog::new();
        log.expect_record().returning(|_, _, _| Ok(()));
        Arc::new(log)
    }

    /// An import log that expects exactly `outcomes`, of `kind`, in order, at 1,234.
    fn counting(kind: ImportKind, outcomes: &[ImportOutcome]) -> Arc<MockImportLog> {
        let mut log = MockImportLog::new();
        let mut sequence = mockall::Sequence::new();
        for outcome in outcomes.iter().copied() {
            log.expect_record()
                .withf(move |k, o, at| (*k, *o, *at) == (kind, outcome, 1_234))
                .times(1)
                .in_sequence(&mut sequence)
                .returning(|_, _, _| Ok(()));
        }
        Arc::new(log)
    }

    #[tokio::test]
    async fn every_atm_import_but_a_dry_run_is_counted_by_its_outcome() {
        let (atms, written) = atms_stored(hundred());
        let outcomes = [ImportOutcome::Unchanged, ImportOutcome::Refused, ImportOutcome::Applied];
        let import = DataImport::new(
            Arc::new(MockWaitTimeRecords::new()),
            Arc::new(atms),
            counting(ImportKind::Atms, &outcomes),
            Arc::new(clock_at(1_234)),
        );
        let dry = ImportRules { dry_run: true, ..ImportRules::default() };
        assert!(matches!(import.atms(&feed(hundred()), dry).await, Ok(AtmImport::Planned { .. })));
        assert!(matches!(import.atms(&feed(hundred()), ImportRules::default()).await, Ok(AtmImport::Unchanged { .. })));
        let cut = feed(hundred().into_iter().take(10).collect());
        assert!(matches!(import.atms(&cut, ImportRules::default()).await, Err(ImportAtmsError::Refused(_))));
        let one_more = feed(hundred().into_iter().chain([atm("Uno", "B000", "x")]).collect());
        assert!(matches!(import.atms(&one_more, ImportRules::default()).await, Ok(AtmImport::Applied(_))));
        assert_eq!(written.lock().unwrap().len(), 1, "only the applied import wrote");
    }

    #[tokio::test]
    async fn a_dry_run_the_store_failed_is_not_counted() {
        let mut atms = MockAtmRecords::new();
        atms.expect_current().returning(|| Err(StoreUnavailable::new("gone")));
        let mut log = MockImportLog::new();
        log.expect_record().never();
        let import = DataImport::new(
            Arc::new(MockWaitTimeRecords::new()),
            Arc::new(atms),
            Arc::new(log),
            Arc::new(clock_at(1_234)),
        );
        let dry = ImportRules { dry_run: true, ..ImportRules::default() };
        assert!(matches!(import.atms(&feed(hundred()), dry).await, Err(ImportAtmsError::Unavailable(_))));
    }

    #[tokio::test]
    async fn an_atm_import_the_store_failed_is_counted_as_failed_and_an_uncountable_one_still_answers() {
        let mut atms = MockAtmRecords::new();
        atms.expect_edit().returning(|_, _| Err(StoreUnavailable::new("gone")));
        let import = DataImport::new(
            Arc::new(MockWaitTimeRecords::new()),
            Arc::new(atms),
            counting(ImportKind::Atms, &[ImportOutcome::Failed]),
            Arc::new(clock_at(1_234)),
        );
        assert!(matches!(
            import.atms(&feed(hundred()), ImportRules::default()).await,
            Err(ImportAtmsError::Unavailable(_))
        ));

        let mut log = MockImportLog::new();
        log.expect_record().times(1).returning(|_, _, _| Err(StoreUnavailable::new("gone")));
        let import = DataImport::new(
            Arc::new(MockWaitTimeRecords::new()),
            Arc::new(atms_stored(hundred()).0),
            Arc::new(log),
            Arc::new(clock_at(1_234)),
        );
        assert!(matches!(import.atms(&feed(hundred()), ImportRules::default()).await, Ok(AtmImport::Unchanged { .. })));
    }

    fn feed(atms: Vec<StoredAtm>) -> AtmFeed {
        AtmFeed { atms, published: Some(1_700_000_000) }
    }

    fn hundred() -> Vec<StoredAtm> {
        (0..100).map(|n| atm("Uno", &format!("A{n:03}"), "x")).collect()
    }

    #[test]
    fn changes_are_found_by_brand_and_identification_whatever_the_order() {
        let current = vec![atm("Uno", "A1", "x"), atm("Uno", "A2", "x"), atm("Dos", "A1", "x")];
        let new = vec![atm("Dos", "A1", "x"), atm("Uno", "A3", "x"), atm("Uno", "A1", "changed")];
        let changes = AtmSetChanges::between(&current, &new);
        assert_eq!(changes.added, [("Uno".to_owned(), "A3".to_owned())]);
        assert_eq!(changes.removed, [("Uno".to_owned(), "A2".to_owned())]);
        assert_eq!(changes.changed, [("Uno".to_owned(), "A1".to_owned())]);
        let reordered: Vec<StoredAtm> = current.iter().rev().cloned().collect();
        assert!(AtmSetChanges::between(&current, &reordered).is_empty());
    }

    #[tokio::test]
    async fn an_identical_feed_writes_nothing_whatever_its_date() {
        let (atms, written) = atms_stored(hundred());
        let mut shuffled = hundred();
        shuffled.reverse();
        let next_day = AtmFeed { atms: shuffled, published: Some(1_800_000_000) };
        let outcome = importing(atms).atms(&next_day, ImportRules::default()).await;
        assert_eq!(outcome.unwrap(), AtmImport::Unchanged { atms: 100 });
        assert!(written.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_changed_feed_is_applied_as_its_differences_dated_now() {
        let (atms, written) = atms_stored(hundred());
        let mut new = hundred();
        new.pop();
        new[0] = atm("Uno", "A000", "moved");
        new.push(atm("Uno", "B1", "x"));
        let AtmImport::Applied(changes) = importing(atms).atms(&feed(new), ImportRules::default()).await.unwrap()
        else {
            panic!("applied");
        };
        assert_eq!((changes.added.len(), changes.removed.len(), changes.changed.len()), (1, 1, 1));
        let written = written.lock().unwrap();
        let [(AtmSetEdit::Apply { upserts, removals }, 1_234)] = written.as_slice() else {
            panic!("one edit, dated now: {written:?}");
        };
        let ids: Vec<&str> = upserts.iter().map(|a| a.identification.as_str()).collect();
        assert_eq!(
            (ids, removals.as_slice()),
            (vec!["A000", "B1"], [("Uno".to_owned(), "A099".to_owned())].as_slice())
        );
    }

    fn closure(id: &str, closes_on: time::Date) -> AtmClosure {
        AtmClosure {
            atm: crate::atm_state::AtmId::parse(id).unwrap(),
            closes_on,
            explanation: crate::text::Explanation::parse("The shop closes").unwrap(),
            short_notice: None,
            announced_at: 0,
        }
    }

    #[tokio::test]
    async fn a_feed_dropping_an_atm_before_its_announced_closure_is_refused_whole_even_if_shrinking_is_allowed() {
        // The clock reads 1_234 (1970-01-01): one closure is to come, one took effect.
        let closures = vec![
            closure("A001", time::macros::date!(2027 - 03 - 01)),
            closure("A002", time::macros::date!(1970 - 01 - 01)),
            closure("A003", time::macros::date!(2027 - 04 - 01)),
        ];
        let without = |ids: &[&str]| -> Vec<StoredAtm> {
            hundred().into_iter().filter(|atm| !ids.contains(&atm.identification.as_str())).collect()
        };
        let allowed = ImportRules { allow_shrink: true, ..ImportRules::default() };
        let (atms, written) = atms_closing(hundred(), closures.clone());
        let refused = importing(atms).atms(&feed(without(&["A001", "A003", "A050"])), allowed).await.unwrap_err();
        let ImportAtmsError::Refused(refusal) = refused else { panic!("refused by the guard") };
        assert_eq!(
            refusal,
            ShrinkRefusal::Closing { atm: "A001".into(), closes_on: time::macros::date!(2027 - 03 - 01), others: 1 }
        );
        assert!(refusal.to_string().contains("atms closure A001 --cancel"), "{refusal}");
        assert!(written.lock().unwrap().is_empty(), "nothing written");

        let (atms, written) = atms_closing(hundred(), closures);
        let applied = importing(atms).atms(&feed(without(&["A002"])), ImportRules::default()).await.unwrap();
        assert!(matches!(applied, AtmImport::Applied(_)), "a closed ATM may go: {applied:?}");
        assert_eq!(written.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_cut_feed_is_refused_with_the_numbers_unless_allowed() {
        let cut: Vec<StoredAtm> = hundred().into_iter().take(42).collect();
        let (atms, written) = atms_stored(hundred());
        let refused = importing(atms).atms(&feed(cut.clone()), ImportRules::default()).await.unwrap_err();
        let ImportAtmsError::Refused(refusal) = refused else { panic!("refused by the guard") };
        assert_eq!(refusal, ShrinkRefusal::Shrinks { current: 100, new: 42, removed: 58, percent: 58, allowed: 10 });
        assert!(refusal.to_string().contains("58 of the 100"), "{refusal}");
        assert!(written.lock().unwrap().is_empty(), "nothing written");

        let (atms, written) = atms_stored(hundred());
        let allowed = ImportRules { allow_shrink: true, ..ImportRules::default() };
        assert!(matches!(importing(atms).atms(&feed(cut), allowed).await, Ok(AtmImport::Applied(_))));
        assert_eq!(written.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn exactly_the_allowed_share_may_go_but_not_one_more() {
        for (kept, refused) in [(90, false), (89, true)] {
            let (atms, written) = atms_stored(hundred());
            let new: Vec<StoredAtm> = hundred().into_iter().take(kept).collect();
            let outcome = importing(atms).atms(&feed(new), ImportRules::default()).await;
            assert_eq!(outcome.is_err(), refused, "{kept} kept");
            assert_eq!(written.lock().unwrap().is_empty(), refused, "{kept} kept");
        }
    }

    #[tokio::test]
    async fn an_empty_feed_and_one_dated_1970_are_refused() {
        let (atms, written) = atms_stored(hundred());
        let import = importing(atms);
        let empty = import.atms(&AtmFeed { atms: Vec::new(), published: Some(0) }, ImportRules::default()).await;
        assert!(matches!(empty, Err(ImportAtmsError::Refused(ShrinkRefusal::Outdated { published: 0 }))));
        let empty = import.atms(&feed(Vec::new()), ImportRules::default()).await;
        assert!(matches!(empty, Err(ImportAtmsError::Refused(ShrinkRefusal::Empties { current: 100 }))));
        let mut small = hundred();
        small[0] = atm("Uno", "A000", "new note");
        let dated_1970 = AtmFeed { atms: small, published: Some(0) };
        assert!(matches!(
            import.atms(&dated_1970, ImportRules::default()).await,
            Err(ImportAtmsError::Refused(ShrinkRefusal::Outdated { .. }))
        ));
        assert!(written.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_dry_run_says_what_would_change_and_writes_nothing() {
        let (mut atms, _) = atms_stored(hundred());
        atms.checkpoint();
        atms.expect_current()
            .returning(|| Ok(AtmSetRecord { atms: hundred(), last_updated: 1, closures: Vec::new(), feed_head: 0 }));
        atms.expect_edit().never();
        let cut: Vec<StoredAtm> = hundred().into_iter().take(50).collect();
        let rules = ImportRules { dry_run: true, ..ImportRules::default() };
        let AtmImport::Planned { changes, refusal } = importing(atms).atms(&feed(cut), rules).await.unwrap() else {
            panic!("planned");
        };
        assert_eq!(changes.removed.len(), 50);
        assert!(matches!(refusal, Some(ShrinkRefusal::Shrinks { removed: 50, .. })));
    }

    #[tokio::test]
    async fn a_first_import_into_an_empty_store_is_applied() {
        let (atms, written) = atms_stored(Vec::new());
        assert!(matches!(
            importing(atms).atms(&feed(hundred()), ImportRules::default()).await,
            Ok(AtmImport::Applied(_))
        ));
        assert_eq!(written.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_branch_given_twice_writes_nothing() {
        let mut wait_times = MockWaitTimeRecords::new();
        wait_times.expect_edit().never();
        let log = counting(ImportKind::WaitTimes, &[ImportOutcome::Invalid]);
        let import =
            DataImport::new(Arc::new(wait_times), Arc::new(MockAtmRecords::new()), log, Arc::new(clock_at(1_234)));
        let rows = [estimate("00001", 5, 0), estimate("00002", 5, 0), estimate("00001", 5, 0)];
        let result = import.wait_times(&rows, false).await;
        assert!(matches!(result, Err(ImportWaitTimesError::DuplicateBranch { first: 0, again: 2, .. })));
    }

    #[tokio::test]
    async fn only_wait_times_that_changed_are_written_and_an_identical_file_writes_nothing() {
        let stored = vec![estimate("00001", 5, 10), estimate("00002", 7, 10)];
        let mut wait_times = MockWaitTimeRecords::new();
        let read = stored.clone();
        wait_times.expect_all().returning(move || Ok(read.clone()));
        let written = Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = Arc::clone(&written);
        wait_times.expect_edit().times(2).returning(move |plan| {
            let rows = plan(&stored);
            kept.lock().unwrap().push(rows.iter().map(|r| r.estimate.branch.to_string()).collect::<Vec<_>>());
            Ok(())
        });
        let log = counting(ImportKind::WaitTimes, &[ImportOutcome::Unchanged, ImportOutcome::Applied]);
        let import =
            DataImport::new(Arc::new(wait_times), Arc::new(MockAtmRecords::new()), log, Arc::new(clock_at(1_234)));
        let same = [estimate("00001", 5, 10), estimate("00002", 7, 10)];
        let unchanged = import.wait_times(&same, false).await.unwrap();
        assert_eq!(unchanged, WaitTimeChanges { added: 0, changed: 0, unchanged: 2, written: false });
        let planned = import.wait_times(&[estimate("00002", 9, 20), estimate("00003", 1, 20)], true).await.unwrap();
        assert_eq!(planned, WaitTimeChanges { added: 1, changed: 1, unchanged: 0, written: false });
        let rows = [estimate("00001", 5, 10), estimate("00002", 9, 20), estimate("00003", 1, 20)];
        let applied = import.wait_times(&rows, false).await.unwrap();
        assert_eq!(applied, WaitTimeChanges { added: 1, changed: 1, unchanged: 1, written: true });
        assert_eq!(*written.lock().unwrap(), [vec![], vec!["00002".to_owned(), "00003".to_owned()]]);
    }
}
