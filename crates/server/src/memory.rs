//! Giving memory back after a burst. glibc keeps what its threads freed on their arenas'
//! free lists and returns to the system only the top of each heap, so a burst of requests
//! (a client opening a hundred HTTP/2 streams on each of many connections, thousands of
//! slow connections) left the service resident at its peak long after the burst was over
//! (issue 21). A task asks glibc to return its free pages (`malloc_trim(0)`, which gives
//! back whole free pages anywhere in every arena's heaps) when there is something to give
//! back: the allocator's live bytes fell by `WORTH_TRIMMING` from their highest since
//! the last trim (a burst ended), or the resident size grew by as much since then (a burst
//! too short for the checks to see rise and fall). Under steady load neither moves and
//! nothing is trimmed.
//!
//! Issue 30: the trimmer used to look at the resident size only, and a trim in the middle
//! of a burst (one that outlasted a check) set the mark to the peak; what the burst freed
//! when it ended left the resident size where it was, so no later check saw anything to
//! trim, and the service held its peak (25 -> 48 MB, 24 -> 77 MB, 30 s later). The freeing
//! shows only in the allocator's own count, which is why it is read.
//!
//! What a trim cannot give back: pages that still hold a live block among freed ones.
//! After `faults::http2_streams`'s burst (12 MB) about 5 MB comes back within 1.5 s and
//! 7 MB stays, in the worker threads' arenas (`/proc/PID/smaps`), while the allocator's
//! live bytes are back below where they were before it (debug build).
//!
//! Nor could it give back the top of a thread's arena: `malloc_trim` shrinks the top of
//! the main heap only, and a thread's heap loses its top only when a `free` finds it
//! larger than the trim threshold, which glibc raises to twice the largest mapped block
//! freed (4.8 MB here, after start-up). So each worker's arena could keep up to that much,
//! free and resident, for good. After 2,000 slow connections (release build, 4 workers,
//! gdb on `main_arena`'s list) three worker arenas kept tops of 4.0-4.8 MB, 2.8 MB of each
//! resident; where transparent huge pages are on, all of it, which the probe's 27 -> 70 ->
//! 44 MB is consistent with. So the service allocates from glibc's main arena alone
//! ([`use_one_arena`]), whose whole free top a trim returns: the same burst then ends
//! within 0.6 MB of where it began, whatever the number of workers.

use std::time::Duration;

/// How often the allocator's count and the resident size are looked at: the service gives
/// memory back within about this long of a burst's end. Both reads are cheap (a file of
/// `/proc`, and a walk of the allocator's free lists).
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Memory freed (or grown) since the last trim that is worth a trim: below this, a trim
/// (which walks every arena under its lock) costs more than it could return.
const WORTH_TRIMMING: u64 = 4 * 1024 * 1024;

/// When to trim, from what the checks saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TrimPolicy {
    /// The resident size the last trim left (or the lowest seen before the first), bytes.
    resident_mark: u64,
    /// The allocator's highest live bytes since the last trim.
    allocated_peak: u64,
}

impl TrimPolicy {
    fn new(resident: u64, allocated: u64) -> Self {
        Self { resident_mark: resident, allocated_peak: allocated }
    }

    /// Whether a trim is worth it now, with the process `resident` and the allocator
    /// holding `allocated` live bytes (`None` where the allocator does not say).
    fn worth_trimming(&mut self, resident: u64, allocated: Option<u64>) -> bool {
        let allocated = allocated.unwrap_or(self.allocated_peak);
        self.allocated_peak = self.allocated_peak.max(allocated);
        let freed = self.allocated_peak - allocated;
        let grown = resident.saturating_sub(self.resident_mark);
        if freed < WORTH_TRIMMING && grown < WORTH_TRIMMING {
            self.resident_mark = self.resident_mark.min(resident);
            return false;
        }
        true
    }

    /// A trim left the process `resident` with `allocated` live bytes.
    fn trimmed(&mut self, resident: u64, allocated: Option<u64>) {
        *self = Self::new(resident, allocated.unwrap_or(self.allocated_peak));
    }
}

/// Makes every thread allocate from glibc's main arena (`M_ARENA_MAX` 1), the one whose
/// free top `malloc_trim` gives back (see the module's doc). Call it before any other
/// thread starts: a thread keeps the arena it first allocated from. The cost is that
/// threads share one lock for what their own caches (glibc's tcache, blocks up to 1 kB)
/// do not serve. `GET /api/health/live` under `wrk -t2 -c50 -d10s`, two workers, on a
/// loaded two-core machine: 29-38k requests/s against 32-41k with an arena a thread, a
/// difference inside the runs' spread; more workers on more cores may show more of it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(unsafe_code, reason = "mallopt is a C function; it has no safety requirement on its caller")]
pub fn use_one_arena() {
    // SAFETY: mallopt only sets one of the allocator's parameters, under its own lock;
    // it takes no pointer and touches no allocation.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Other allocators have no arenas to choose.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn use_one_arena() {}

/// Starts the trimming task on the current runtime; each trim runs on a blocking thread.
pub fn spawn_trimmer() {
    tokio::spawn(async {
        let mut ticks = tokio::time::interval(CHECK_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let Some(resident) = resident_bytes() else { return };
        let mut policy = TrimPolicy::new(resident, allocated_bytes().unwrap_or(0));
        loop {
            ticks.tick().await;
            let Some(resident) = resident_bytes() else { return };
            if !policy.worth_trimming(resident, allocated_bytes()) {
                continue;
            }
            if tokio::task::spawn_blocking(trim).await.is_err() {
                return;
            }
            let after = resident_bytes().unwrap_or(resident);
            let allocated = allocated_bytes();
            policy.trimmed(after, allocated);
            tracing::debug!(
                before_kb = resident / 1024,
                after_kb = after / 1024,
                allocated_kb = allocated.map(|bytes| bytes / 1024),
                "returned freed memory to the system"
            );
        }
    });
}

/// The process's resident size (`VmRSS`) in bytes, if the system says.
fn resident_bytes() -> Option<u64> {
    resident_kb().map(|kb| kb * 1024)
}

/// The process's resident size (`VmRSS`), if the system says.
fn resident_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| line.strip_prefix("VmRSS:"))?.trim().strip_suffix("kB")?.trim().parse().ok()
}

/// Asks glibc to return every free page it holds.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(unsafe_code, reason = "malloc_trim is a C function; it has no safety requirement on its caller")]
fn trim() {
    // SAFETY: malloc_trim(0) only walks and trims the allocator's own free lists, under
    // its own locks; it takes no pointer and touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators (musl's, the BSDs') return freed pages on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

/// The bytes glibc's allocator has handed out from its arenas and not had back, over all
/// arenas (`mallinfo2().uordblks`, glibc 2.33 and later; chunks big enough to be mapped
/// on their own go back to the system when freed, so they are not counted).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(unsafe_code, reason = "mallinfo2 is a C function; it has no safety requirement on its caller")]
fn allocated_bytes() -> Option<u64> {
    // SAFETY: mallinfo2 takes each arena's lock while it sums its free lists, and returns
    // a plain struct by value; it touches no live allocation.
    let info = unsafe { libc::mallinfo2() };
    u64::try_from(info.uordblks).ok()
}

/// Other allocators: not known, and nothing to trim.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn allocated_bytes() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1024 * 1024;

    #[test]
    fn the_resident_size_is_read_from_the_system() {
        let resident = resident_kb().expect("Linux says");
        assert!(resident > 100, "{resident} kB");
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn the_allocators_live_bytes_follow_what_is_allocated_and_freed() {
        let before = allocated_bytes().expect("glibc says");
        // Small blocks, as a burst's buffers are: arena memory, not mappings of their own.
        let blocks: Vec<Vec<u8>> = (0..4096).map(|_| vec![1_u8; 4096]).collect();
        let during = allocated_bytes().unwrap();
        drop(blocks);
        let after = allocated_bytes().unwrap();
        // Other tests allocate on other threads meanwhile: generous bounds.
        assert!(during >= before + 8 * MB, "{before} -> {during}");
        assert!(after + 8 * MB <= during, "{during} -> {after}");
    }

    /// Issue 30: a trim in the middle of a burst set the mark to the peak, and what the
    /// burst freed at its end changed nothing the trimmer looked at.
    #[test]
    fn a_burst_that_outlasts_a_trim_is_trimmed_again_when_it_ends() {
        let mut policy = TrimPolicy::new(25 * MB, 10 * MB);
        assert!(!policy.worth_trimming(26 * MB, Some(11 * MB)), "steady: nothing to give back");
        // The burst grows: worth a trim, which frees little (its memory is in use).
        assert!(policy.worth_trimming(48 * MB, Some(33 * MB)));
        policy.trimmed(47 * MB, Some(33 * MB));
        assert!(!policy.worth_trimming(48 * MB, Some(34 * MB)), "the burst goes on, steady");
        // It ends: the allocator has its memory back, the resident size has not moved.
        assert!(policy.worth_trimming(48 * MB, Some(11 * MB)), "what the burst freed is given back");
        policy.trimmed(27 * MB, Some(11 * MB));
        assert!(!policy.worth_trimming(27 * MB, Some(11 * MB)), "and then nothing more");
    }

    #[test]
    fn a_burst_between_two_checks_is_trimmed_by_the_growth_it_left() {
        let mut policy = TrimPolicy::new(25 * MB, 10 * MB);
        assert!(policy.worth_trimming(40 * MB, Some(10 * MB)));
        policy.trimmed(26 * MB, Some(10 * MB));
        assert!(!policy.worth_trimming(27 * MB, Some(10 * MB)));
    }

    #[test]
    fn without_the_allocators_count_growth_alone_decides() {
        let mut policy = TrimPolicy::new(25 * MB, 0);
        assert!(!policy.worth_trimming(27 * MB, None));
        assert!(policy.worth_trimming(30 * MB, None));
    }
}
