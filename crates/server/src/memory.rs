//! Giving memory back after a burst. glibc keeps what its threads freed on their arenas'
//! free lists and returns to the system only the top of each heap, so a burst of requests
//! (a client opening a hundred HTTP/2 streams on each of many connections, say) left the
//! service resident at its peak long after the burst was over (issue 21). While the
//! resident size stays above what the last trim left, a task asks glibc to return its
//! free pages (`malloc_trim(0)`, which gives back whole free pages anywhere in a heap).
//! Under steady load the size does not grow and nothing is trimmed.

use std::time::Duration;

/// How often the resident size is looked at.
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// Growth since the last trim that is worth a trim: below this, a trim (which walks every
/// arena under its lock) costs more than it could return.
const WORTH_TRIMMING_KB: u64 = 4 * 1024;

/// Starts the trimming task on the current runtime; each trim runs on a blocking thread.
pub fn spawn_trimmer() {
    tokio::spawn(async {
        let mut ticks = tokio::time::interval(CHECK_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut floor_kb = u64::MAX;
        loop {
            ticks.tick().await;
            let Some(resident) = resident_kb() else { return };
            if resident < floor_kb.saturating_add(WORTH_TRIMMING_KB) {
                floor_kb = floor_kb.min(resident);
                continue;
            }
            if tokio::task::spawn_blocking(trim).await.is_err() {
                return;
            }
            floor_kb = resident_kb().unwrap_or(resident);
            tracing::debug!(before_kb = resident, after_kb = floor_kb, "returned freed memory to the system");
        }
    });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resident_size_is_read_from_the_system() {
        let resident = resident_kb().expect("Linux says");
        assert!(resident > 100, "{resident} kB");
    }
}
