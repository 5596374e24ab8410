//! The statements every SQL store shares, written once in PostgreSQL's notation (`$1`,
//! `$2`…, each number once and in order) and rendered for each backend by its [`Syntax`].

use std::any::TypeId;
use std::sync::{Mutex, PoisonError};

/// How a backend numbers the placeholders of a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placeholders {
    /// `$1`, `$2`…, as the statements are written (PostgreSQL; SQLite reads `$NNN` as
    /// parameter NNN).
    Numbered,
    /// `?`, bound in the order they appear (MySQL, MariaDB).
    Positional,
}

/// How a backend phrases what the SQL dialects write differently in the shared
/// statements. Everything else in them (`COALESCE`, `EXISTS`, `CASE`, `ORDER BY`, `LIMIT`)
/// is read alike by SQLite, PostgreSQL and MariaDB.
pub(crate) struct Syntax {
    /// How placeholders are written.
    pub placeholders: Placeholders,
    /// An upsert's clause for the unique key `keys` (a column list), up to its
    /// assignments: `ON CONFLICT (keys) DO UPDATE SET`, or `ON DUPLICATE KEY UPDATE`.
    pub upsert: fn(keys: &str) -> String,
    /// In an upsert's assignments, the value the INSERT proposed for `column`:
    /// `excluded.column`, or `VALUES(column)`.
    pub proposed: fn(column: &str) -> String,
    /// What ends an INSERT that inserts nothing where the row's key is stored already
    /// (`ON CONFLICT DO NOTHING`); empty for a dialect with no such clause short of
    /// hiding other errors too (MySQL's `INSERT IGNORE` stores a too-long value cut
    /// short): the shared code then reads the duplicate's error as "nothing inserted".
    pub skip_duplicates: &'static str,
}

impl Syntax {
    /// PostgreSQL's and SQLite's: numbered placeholders and `ON CONFLICT`.
    pub(crate) const ON_CONFLICT: Self = Self {
        placeholders: Placeholders::Numbered,
        upsert: |keys| format!("ON CONFLICT ({keys}) DO UPDATE SET"),
        proposed: |column| format!("excluded.{column}"),
        skip_duplicates: " ON CONFLICT DO NOTHING",
    };

    /// `template` with its placeholders written as this backend writes them.
    ///
    /// # Panics
    /// If the template does not number its placeholders `$1`, `$2`… once each, in order:
    /// positional placeholders could not bind them otherwise. Every statement is rendered
    /// for every syntax by this module's tests.
    #[allow(clippy::panic)]
    pub(crate) fn render(&self, template: &str) -> String {
        let mut rendered = String::with_capacity(template.len());
        let mut rest = template;
        let mut expected = 1;
        while let Some(dollar) = rest.find('$') {
            rendered.push_str(&rest[..dollar]);
            let digits = rest[dollar + 1..].bytes().take_while(u8::is_ascii_digit).count();
            let number: usize = rest[dollar + 1..dollar + 1 + digits]
                .parse()
                .unwrap_or_else(|_| panic!("a `$` that is no placeholder in {template:?}"));
            assert!(number == expected, "placeholder ${number} where ${expected} belongs in {template:?}");
            expected += 1;
            match self.placeholders {
                Placeholders::Numbered => rendered.push_str(&rest[dollar..=dollar + digits]),
                Placeholders::Positional => rendered.push('?'),
            }
            rest = &rest[dollar + 1 + digits..];
        }
        rendered.push_str(rest);
        rendered
    }
}

/// The ids of revoked tokens still live at `$1`, where a partial index of `issued_tokens`
/// finds them (PostgreSQL, SQLite).
pub(crate) const REVOKED_IN_ISSUED_TOKENS: &str =
    "SELECT jti FROM issued_tokens WHERE revoked_at IS NOT NULL AND expires_at >= $1";

/// Every statement the shared roles ([`super::roles`]) run, rendered for one backend. Made
/// once per dialect ([`Statements::of`]) and kept for the process's life.
pub(crate) struct Statements {
    /// Whether the store answers (readiness).
    pub ping: &'static str,
    /// Every change counter: `(topic, revision)`.
    pub revisions: &'static str,
    /// Counts one import run `($1 kind, $2 outcome, $3 at)`; the last time never moves back
    /// (a host whose clock is behind).
    pub record_import: &'static str,
    /// Every import counter ([`crate::rows::ImportRunRow`]).
    pub import_tally: &'static str,
    /// Whether each table holds anything.
    pub contents: &'static str,
    /// Registers a client, or nothing when its id is taken.
    pub insert_client: &'static str,
    /// Every client ([`crate::rows::ClientRow`]).
    pub clients: &'static str,
    /// Sets a client's status `($1 status, $2 client)`.
    pub set_client_status: &'static str,
    /// Sets a client's addresses, each left as it is where `NULL`.
    pub change_client: &'static str,
    /// Supports a channel, or nothing when it is already.
    pub allow_channel: &'static str,
    /// Every supported channel.
    pub channels: &'static str,
    /// Every branch's estimate ([`crate::rows::WaitTimeRow`]).
    pub wait_times: &'static str,
    /// The date of the ATM set (one row).
    pub atm_set_date: &'static str,
    /// The ATM set's rows ([`crate::rows::AtmRow`]), in brand then identification order.
    pub atms_in_order: &'static str,
    /// Dates the ATM set `$1`, in the transaction that changed it: the one write that moves
    /// the `atms` change counter (its trigger is on this row, not on each ATM's).
    pub date_atm_set: &'static str,
    /// Empties the ATM set, before a whole new one is written.
    pub delete_every_atm: &'static str,
    /// The keys published `($1 retired after)`, newest first.
    pub published_keys: &'static str,
    /// Every key, newest first.
    pub all_keys: &'static str,
    /// Revokes a key still standing `($1 now, $2 kid)`.
    pub revoke_key: &'static str,
    /// Drops the keys still waiting to sign `($1 now)`; revoked ones stay, to be listed.
    pub drop_waiting_keys: &'static str,
    /// Retires the key signing at `$2` (now) at `$1` (the next key's activation).
    pub retire_current_key: &'static str,
    /// Stores a new key.
    pub insert_key: &'static str,
    /// Reseals a key's private half `($1 to, $2 kid, $3 from)`, if it is still `from`.
    pub reseal_key: &'static str,
    /// A token's record by its opaque value ([`crate::rows::TokenRow`]).
    pub find_token: &'static str,
    /// Revokes a token `($1 now, $2 jti)`.
    pub revoke_token: &'static str,
    /// Revokes a client's live tokens `($1 now, $2 client, $3 now)`.
    pub revoke_live_of: &'static str,
    /// The ids of revoked tokens still live at `$1`.
    pub revoked_live: &'static str,
    /// Every token record still live at `$1`, by expiry.
    pub live_tokens: &'static str,
    /// Stores a planned outage `($1 id, $2 start, $3 seconds, $4 partial, $5 text, $6 now)`.
    pub insert_outage: &'static str,
    /// The planned outages ending after `$1` ([`crate::rows::OutageRow`]), soonest first.
    pub outages_not_over: &'static str,
    /// Removes the planned outage `$1`.
    pub cancel_outage: &'static str,
    /// Registers a system `($1 id, $2 JWKS, $3 key count, $4 scopes, $5 status, $6 now)`,
    /// or nothing when its id is taken.
    pub insert_system: &'static str,
    /// Every system ([`crate::rows::SystemRow`]), by id.
    pub systems: &'static str,
    /// The system `$1` ([`crate::rows::SystemRow`]).
    pub find_system: &'static str,
    /// Sets a system's status `($1 status, $2 id)`.
    pub set_system_status: &'static str,
    /// Sets a system's keys (`$1` JWKS with `$2` its key count) and scopes `$3`, each left
    /// as it is where `NULL`, of the system `$4`.
    pub change_system: &'static str,
    /// Records an assertion used `($1 system, $2 jti, $3 expiry)`, or nothing when it was
    /// used before.
    pub use_assertion: &'static str,
    /// Drops the assertions that expired before `$1`.
    pub forget_assertions: &'static str,
    /// Appends a queue event `($1 id, $2 branch, $3 kind, $4 at, $5 ticket, $6 counter,
    /// $7 system, $8 received at)`, or nothing when its id is stored already.
    pub append_queue_event: &'static str,
    /// Dates the log's latest append (its trigger moves the `queue_events` counter).
    pub touch_queue_log: &'static str,
    /// The queue events received at or after `$1` ([`crate::rows::QueueEventRow`]), by
    /// received time and id.
    pub queue_events_received_since: &'static str,
    /// The queue events that happened at or after `$1` ([`crate::rows::QueueEventRow`]),
    /// by when they happened.
    pub queue_events_happened_since: &'static str,
    /// Drops the queue events that happened before `$1`.
    pub forget_queue_events: &'static str,
    /// Records a state event's id `($1 id, $2 ATM, $3 at, $4 system, $5 received at)`, or
    /// nothing when it is stored already.
    pub record_state_event: &'static str,
    /// The state of the ATM `$1` ([`crate::rows::AtmStateRow`]).
    pub atm_state: &'static str,
    /// Every ATM's state, by ATM id.
    pub atm_states: &'static str,
    /// Writes the state of the ATM `$1` (the columns of [`crate::rows::AtmStateRow`]).
    pub put_atm_state: &'static str,
    /// Dates the latest apply that changed a state (its trigger moves `atm_states`).
    pub touch_atm_state_log: &'static str,
    /// Drops the state event ids of events that happened before `$1`.
    pub forget_state_events: &'static str,
    /// Every closure announced ([`crate::rows::AtmClosureRow`]), by ATM id.
    pub atm_closures: &'static str,
    /// Whether an ATM of the set has the identification `$1` (a row, or none).
    pub atm_in_set: &'static str,
    /// Writes the closure of the ATM `$1` (the columns of [`crate::rows::AtmClosureRow`]).
    pub put_atm_closure: &'static str,
    /// Removes the closure of the ATM `$1`.
    pub cancel_atm_closure: &'static str,
    /// The closure of the ATM `$1` as it stands: `(closes_on, removal_fed)`; no row, no
    /// closure.
    pub closure_standing: &'static str,
    /// Locks the ATMs' states' log row: a closure's write and a state apply take turns,
    /// each feeding what the other committed.
    pub lock_atm_state_log: &'static str,
    /// Sets whether the feed holds the removal of the ATM `$2` closed (`$1`: 0 or 1).
    pub set_closure_removal_fed: &'static str,
    /// The ATMs whose closure took effect by `$1` and whose removal the feed lacks.
    pub closures_due: &'static str,
    /// The records of the identification `$1` ([`crate::rows::AtmRow`]), by brand.
    pub atms_with_id: &'static str,
    /// The change log's head, its row locked until the transaction ends (where the
    /// dialect locks rows; SQLite's writers hold the whole database already).
    pub lock_change_log: &'static str,
    /// Sets the change log's head to `$1`, after appending up to it.
    pub advance_change_log: &'static str,
    /// The change log's identity, head and floor.
    pub change_log_state: &'static str,
    /// The change log's head, read (a reader's snapshot, or a writer's transaction).
    pub feed_head: &'static str,
    /// The changes numbered above `$1`, at most `$2` ([`crate::rows::AtmChangeRow`]).
    pub changes_since: &'static str,
    /// Sets the head and the floor to `$1` and `$2` (the same): past every cursor given, so
    /// each starts again (a whole new set).
    pub restart_change_log: &'static str,
    /// The number of the last change appended before `$1` (seconds), if any (numbers and
    /// append times go together but for hosts' clocks).
    pub last_change_before: &'static str,
    /// Forgets the changes numbered up to `$1`.
    pub forget_changes: &'static str,
    /// Raises the floor to `$1` (`$2` the same), if it is lower.
    pub raise_change_floor: &'static str,
}

/// The columns of a token record, in [`crate::rows::TokenRow`]'s order.
const TOKEN_COLUMNS: &str =
    "jti, opaque_token, client_id, session_id, issued_at, expires_at, code_challenge, revoked_at";

/// The columns of a signing key, in [`crate::rows::SigningKeyRow`]'s order.
const KEY_COLUMNS: &str = "kid, private_key, public_key, created_at, activates_at, retired_at, revoked_at";

/// The columns of a queue event, in [`crate::rows::QueueEventRow`]'s order.
const ATM_STATE_COLUMNS: &str = "atm_id, state, unavailable, reason, expected_back_at, since, heard_at, heard_event_id";
/// The columns of a closure, in [`crate::rows::AtmClosureRow`]'s order.
const ATM_CLOSURE_COLUMNS: &str = "atm_id, closes_on, explanation, short_notice, announced_at";
const QUEUE_EVENT_COLUMNS: &str = "event_id, branch_id, kind, at_micros, ticket, counter, system_id, received_at";

impl Statements {
    /// The statements in the syntax of the dialect `D`, rendered at its first store and
    /// kept for the process's life. (A `static` in a generic function is one for every
    /// dialect, so each dialect's rendering is found by its type.)
    pub(crate) fn of<D: super::SqlDialect>() -> &'static Self {
        static RENDERED: Mutex<Vec<(TypeId, &'static Statements)>> = Mutex::new(Vec::new());
        let mut rendered = RENDERED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&(_, statements)) = rendered.iter().find(|(dialect, _)| *dialect == TypeId::of::<D>()) {
            return statements;
        }
        let statements: &'static Self = Box::leak(Box::new(Self::new(&D::SYNTAX, D::FOR_UPDATE, D::REVOKED_LIVE)));
        rendered.push((TypeId::of::<D>(), statements));
        statements
    }

    /// Every statement, rendered for `syntax` and kept for the process's life (a few
    /// kilobytes, once per backend).
    /// `for_update` ends a SELECT that locks the rows it reads until the transaction ends
    /// (` FOR UPDATE`; empty where writers lock the whole database); `revoked_live` is
    /// [`Statements::revoked_live`] as the dialect phrases it.
    pub(crate) fn new(syntax: &Syntax, for_update: &str, revoked_live: &str) -> Self {
        let render = |template: &str| -> &'static str { syntax.render(template).leak() };
        let proposed = syntax.proposed;
        Self {
            ping: render("SELECT revision FROM change_log LIMIT 1"),
            revisions: render("SELECT topic, revision FROM change_log"),
            record_import: render(&format!(
                "INSERT INTO import_runs (kind, outcome, runs, last_at) VALUES ($1, $2, 1, $3) {} \
                 runs = import_runs.runs + 1, last_at = CASE WHEN {last_at} > import_runs.last_at \
                 THEN {last_at} ELSE import_runs.last_at END",
                (syntax.upsert)("kind, outcome"),
                last_at = proposed("last_at"),
            )),
            import_tally: render("SELECT kind, outcome, runs, last_at FROM import_runs ORDER BY kind, outcome"),
            contents: render(
                "SELECT EXISTS (SELECT 1 FROM clients), EXISTS (SELECT 1 FROM supported_channels), \
                 EXISTS (SELECT 1 FROM branch_wait_times), EXISTS (SELECT 1 FROM atms), \
                 EXISTS (SELECT 1 FROM issued_tokens)",
            ),
            insert_client: render(&format!(
                "INSERT INTO clients (client_id, country_code, business_code, channel_id, redirect_uris, \
                 allowed_origins, status, dpop, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9){}",
                syntax.skip_duplicates
            )),
            clients: render(
                "SELECT client_id, country_code, business_code, channel_id, redirect_uris, allowed_origins, \
                 status, dpop FROM clients ORDER BY client_id",
            ),
            set_client_status: render("UPDATE clients SET status = $1 WHERE client_id = $2"),
            change_client: render(
                "UPDATE clients SET redirect_uris = COALESCE($1, redirect_uris), \
                 allowed_origins = COALESCE($2, allowed_origins), dpop = COALESCE($3, dpop) WHERE client_id = $4",
            ),
            allow_channel: render(&format!(
                "INSERT INTO supported_channels (country_code, business_code, channel_id) VALUES ($1, $2, $3){}",
                syntax.skip_duplicates
            )),
            channels: render("SELECT country_code, business_code, channel_id FROM supported_channels ORDER BY 1, 2, 3"),
            wait_times: render("SELECT branch_id, minutes, estimated_at FROM branch_wait_times"),
            atm_set_date: render("SELECT last_updated FROM atm_set WHERE id = 1"),
            atms_in_order: render(
                "SELECT brand_name, identification, record, services, accessibility, latitude, longitude \
                 FROM atms ORDER BY brand_name, identification",
            ),
            date_atm_set: render("UPDATE atm_set SET last_updated = $1 WHERE id = 1"),
            delete_every_atm: render("DELETE FROM atms"),
            published_keys: render(&format!(
                "SELECT {KEY_COLUMNS} FROM signing_keys WHERE (retired_at IS NULL OR retired_at > $1) \
                 AND revoked_at IS NULL ORDER BY activates_at DESC, kid"
            )),
            all_keys: render(&format!("SELECT {KEY_COLUMNS} FROM signing_keys ORDER BY activates_at DESC, kid")),
            revoke_key: render("UPDATE signing_keys SET revoked_at = $1 WHERE kid = $2 AND revoked_at IS NULL"),
            drop_waiting_keys: render("DELETE FROM signing_keys WHERE activates_at > $1 AND revoked_at IS NULL"),
            retire_current_key: render(
                "UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NULL OR retired_at > $2",
            ),
            insert_key: render(
                "INSERT INTO signing_keys (kid, algorithm, private_key, public_key, created_at, activates_at) \
                 VALUES ($1, 'EdDSA', $2, $3, $4, $5)",
            ),
            reseal_key: render("UPDATE signing_keys SET private_key = $1 WHERE kid = $2 AND private_key = $3"),
            find_token: render(&format!("SELECT {TOKEN_COLUMNS} FROM issued_tokens WHERE opaque_token = $1")),
            revoke_token: render("UPDATE issued_tokens SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL"),
            revoke_live_of: render(
                "UPDATE issued_tokens SET revoked_at = $1 \
                 WHERE client_id = $2 AND revoked_at IS NULL AND expires_at >= $3",
            ),
            revoked_live: render(revoked_live),
            live_tokens: render(&format!(
                "SELECT {TOKEN_COLUMNS} FROM issued_tokens WHERE expires_at >= $1 ORDER BY expires_at, jti"
            )),
            insert_outage: render(
                "INSERT INTO planned_outages (id, starts_at, duration_seconds, is_partial, explanation, scheduled_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            ),
            outages_not_over: render(
                "SELECT id, starts_at, duration_seconds, is_partial, explanation FROM planned_outages \
                 WHERE starts_at + duration_seconds > $1 ORDER BY starts_at, id",
            ),
            cancel_outage: render("DELETE FROM planned_outages WHERE id = $1"),
            insert_system: render(&format!(
                "INSERT INTO systems (id, jwks, key_count, scopes, status, registered_at) \
                 VALUES ($1, $2, $3, $4, $5, $6){}",
                syntax.skip_duplicates
            )),
            systems: render("SELECT id, jwks, key_count, scopes, status FROM systems ORDER BY id"),
            find_system: render("SELECT id, jwks, key_count, scopes, status FROM systems WHERE id = $1"),
            set_system_status: render("UPDATE systems SET status = $1 WHERE id = $2"),
            change_system: render(
                "UPDATE systems SET jwks = COALESCE($1, jwks), key_count = COALESCE($2, key_count), \
                 scopes = COALESCE($3, scopes) WHERE id = $4",
            ),
            use_assertion: render(&format!(
                "INSERT INTO system_assertions (system_id, jti, expires_at) VALUES ($1, $2, $3){}",
                syntax.skip_duplicates
            )),
            forget_assertions: render("DELETE FROM system_assertions WHERE expires_at < $1"),
            append_queue_event: render(&format!(
                "INSERT INTO queue_events ({QUEUE_EVENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8){}",
                syntax.skip_duplicates
            )),
            touch_queue_log: render("UPDATE queue_log SET received_at = $1 WHERE id = 1"),
            queue_events_received_since: render(&format!(
                "SELECT {QUEUE_EVENT_COLUMNS} FROM queue_events WHERE received_at >= $1 ORDER BY received_at, event_id"
            )),
            queue_events_happened_since: render(&format!(
                "SELECT {QUEUE_EVENT_COLUMNS} FROM queue_events WHERE at_micros >= $1 ORDER BY at_micros, event_id"
            )),
            forget_queue_events: render("DELETE FROM queue_events WHERE at_micros < $1"),
            record_state_event: render(&format!(
                "INSERT INTO atm_state_events (event_id, atm_id, at_micros, system_id, received_at) \
                 VALUES ($1, $2, $3, $4, $5){}",
                syntax.skip_duplicates
            )),
            atm_state: render(&format!("SELECT {ATM_STATE_COLUMNS} FROM atm_states WHERE atm_id = $1")),
            atm_states: render(&format!("SELECT {ATM_STATE_COLUMNS} FROM atm_states ORDER BY atm_id")),
            put_atm_state: render(&format!(
                "INSERT INTO atm_states ({ATM_STATE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) {} \
                 state = {}, unavailable = {}, reason = {}, expected_back_at = {}, since = {}, heard_at = {}, \
                 heard_event_id = {}",
                (syntax.upsert)("atm_id"),
                proposed("state"),
                proposed("unavailable"),
                proposed("reason"),
                proposed("expected_back_at"),
                proposed("since"),
                proposed("heard_at"),
                proposed("heard_event_id"),
            )),
            touch_atm_state_log: render("UPDATE atm_state_log SET received_at = $1 WHERE id = 1"),
            forget_state_events: render("DELETE FROM atm_state_events WHERE at_micros < $1"),
            atm_closures: render(&format!("SELECT {ATM_CLOSURE_COLUMNS} FROM atm_closures ORDER BY atm_id")),
            atm_in_set: render("SELECT 1 FROM atms WHERE identification = $1 LIMIT 1"),
            put_atm_closure: render(&format!(
                "INSERT INTO atm_closures ({ATM_CLOSURE_COLUMNS}) VALUES ($1, $2, $3, $4, $5) {} closes_on = {}, \
                 explanation = {}, short_notice = {}, announced_at = {}",
                (syntax.upsert)("atm_id"),
                proposed("closes_on"),
                proposed("explanation"),
                proposed("short_notice"),
                proposed("announced_at"),
            )),
            cancel_atm_closure: render("DELETE FROM atm_closures WHERE atm_id = $1"),
            closure_standing: render("SELECT closes_on, removal_fed FROM atm_closures WHERE atm_id = $1"),
            lock_atm_state_log: render(&format!("SELECT id FROM atm_state_log WHERE id = 1{for_update}")),
            set_closure_removal_fed: render("UPDATE atm_closures SET removal_fed = $1 WHERE atm_id = $2"),
            closures_due: render("SELECT atm_id FROM atm_closures WHERE closes_on <= $1 AND removal_fed = 0"),
            atms_with_id: render(
                "SELECT brand_name, identification, record, services, accessibility, latitude, longitude \
                 FROM atms WHERE identification = $1 ORDER BY brand_name",
            ),
            lock_change_log: render(&format!("SELECT head FROM atm_change_log WHERE id = 1{for_update}")),
            advance_change_log: render("UPDATE atm_change_log SET head = $1 WHERE id = 1"),
            change_log_state: render("SELECT store_id, head, floor FROM atm_change_log WHERE id = 1"),
            feed_head: render("SELECT head FROM atm_change_log WHERE id = 1"),
            changes_since: render(
                "SELECT seq, brand, atm_id, kind, at_micros, body FROM atm_changes WHERE seq > $1 ORDER BY seq \
                 LIMIT $2",
            ),
            restart_change_log: render("UPDATE atm_change_log SET head = $1, floor = $2 WHERE id = 1"),
            // By the index on `written_at`, newest first: `MAX(seq)` walked the whole log
            // backwards by number when nothing was old enough (callgrind: 10 million
            // instructions at each start on a log of 100,000 changes).
            last_change_before: render(
                "SELECT seq FROM atm_changes WHERE written_at < $1 ORDER BY written_at DESC, seq DESC LIMIT 1",
            ),
            forget_changes: render("DELETE FROM atm_changes WHERE seq <= $1"),
            raise_change_floor: render("UPDATE atm_change_log SET floor = $1 WHERE id = 1 AND floor < $2"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A syntax with positional placeholders and MySQL's upsert, as MariaDB's is.
    const POSITIONAL: Syntax = Syntax {
        placeholders: Placeholders::Positional,
        upsert: |_| "ON DUPLICATE KEY UPDATE".to_owned(),
        proposed: |column| format!("VALUES({column})"),
        skip_duplicates: "",
    };

    #[test]
    fn placeholders_are_numbered_as_written_or_made_positional_in_order() {
        let template = "UPDATE t SET a = $1 WHERE b = $2 AND c >= $3";
        assert_eq!(Syntax::ON_CONFLICT.render(template), template);
        assert_eq!(POSITIONAL.render(template), "UPDATE t SET a = ? WHERE b = ? AND c >= ?");
        assert_eq!(POSITIONAL.render("SELECT 1"), "SELECT 1");
    }

    #[test]
    #[should_panic(expected = "placeholder $1 where $2 belongs")]
    fn a_number_bound_twice_cannot_be_made_positional_and_is_refused_when_rendered() {
        Syntax::ON_CONFLICT.render("UPDATE t SET a = $1 WHERE b = $1");
    }

    /// Every shared statement renders for both syntaxes (a template that breaks the
    /// `$1, $2…` rule fails here, not on a store), and the positional rendering keeps
    /// the same number of parameters.
    #[test]
    fn every_shared_statement_renders_for_every_syntax_with_the_same_parameters() {
        let numbered = Statements::new(&Syntax::ON_CONFLICT, " FOR UPDATE", REVOKED_IN_ISSUED_TOKENS);
        let positional = Statements::new(&POSITIONAL, " FOR UPDATE", REVOKED_IN_ISSUED_TOKENS);
        assert!(numbered.record_import.contains("ON CONFLICT (kind, outcome) DO UPDATE SET"));
        assert!(numbered.record_import.contains("CASE WHEN excluded.last_at > import_runs.last_at"));
        assert!(positional.record_import.contains("ON DUPLICATE KEY UPDATE runs = import_runs.runs + 1"));
        assert!(positional.record_import.contains("VALUES(last_at)"));
        assert!(numbered.insert_client.ends_with("ON CONFLICT DO NOTHING"));
        assert!(positional.insert_client.ends_with("?, ?)"), "{}", positional.insert_client);
        assert!(numbered.append_queue_event.ends_with("$8) ON CONFLICT DO NOTHING"));
        assert!(positional.append_queue_event.ends_with("?, ?)"), "{}", positional.append_queue_event);
        assert!(positional.use_assertion.ends_with("(?, ?, ?)"), "{}", positional.use_assertion);
        assert_eq!(numbered.revoke_live_of.matches('$').count(), positional.revoke_live_of.matches('?').count());
        assert!(!positional.revoke_live_of.contains('$') && !positional.insert_key.contains('$'));
    }
}
