//! A full disk under the store: tokens that cannot be stored are refused, never handed
//! out, and the writer recovers by itself once there is room again.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::{Service, cannot_run, cli, flood, run, said, sqlite_fault, store_knows};

/// A tmpfs of a few megabytes: room for the demo store and little else.
struct SmallDisk {
    path: PathBuf,
    _folder: tempfile::TempDir,
}

impl SmallDisk {
    const SIZE: &str = "size=8m";

    /// Mounts one, or says why it could not (not root, or root in a container that may
    /// not mount).
    fn mount() -> Result<Self, String> {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("disk");
        std::fs::create_dir(&path).unwrap();
        let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", Self::SIZE, "tmpfs"]).arg(&path).output();
        match mounted {
            Ok(output) if output.status.success() => Ok(Self { path, _folder: folder }),
            Ok(output) => Err(format!(
                "mounting a small tmpfs for a full disk was refused (it needs root): {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )),
            Err(error) => Err(format!("mount could not be run: {error}")),
        }
    }

    fn filler(&self) -> PathBuf {
        self.path.join("filler")
    }

    /// Writes zeros until the disk refuses another byte.
    fn fill(&self) {
        let mut filler = std::fs::File::create(self.filler()).unwrap();
        let chunk = vec![0_u8; 4096];
        while filler.write_all(&chunk).is_ok() {}
        let _ = filler.sync_all();
    }

    fn free(&self) {
        std::fs::remove_file(self.filler()).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs root (a tmpfs for a full disk); cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn a_full_disk_refuses_tokens_it_cannot_store_and_the_writer_recovers_by_itself() {
    if !sqlite_fault("a full disk under the store file") {
        return;
    }
    run(async {
        let disk = match SmallDisk::mount() {
            Ok(disk) => disk,
            Err(why) => return cannot_run(&why),
        };
        let url = format!("sqlite://{}/branch-atm.db", disk.path.display());
        let mut service = Service::start(&url, &[]).await;

        disk.fill();
        let during = flood(&service, 4, tokio::time::sleep(Duration::from_secs(3))).await;
        eprintln!("figure: disk full for 3 s: {:?}, {} unanswered", during.statuses, during.unanswered);
        assert!(during.count(500) > 0, "the full disk reached the token writes: {during:?}");
        assert_eq!(during.count(200) + during.count(500), during.statuses.values().sum::<usize>(), "{during:?}");
        let unstored: Vec<&String> = during.issued.iter().filter(|opaque| !store_knows(&url, opaque)).collect();
        assert!(unstored.is_empty(), "{} tokens answered 200 on a full disk are not in the store", unstored.len());

        disk.free();
        let freed = Instant::now();
        let mut after = Vec::new();
        while after.len() < 20 {
            assert!(freed.elapsed() < Duration::from_secs(10), "issuance recovers by itself once there is room");
            match service.authorize().await {
                Ok((200, Some(body))) => after.push(body["opaque_token"].as_str().unwrap().to_owned()),
                _ => after.clear(),
            }
        }
        eprintln!("figure: disk full: 20 tokens in a row {} ms after the space was freed", freed.elapsed().as_millis());
        let allow =
            cli(&url, &["access", "allow", "--country-code", "MX", "--business-code", "GCB", "--channel-id", "KIOSK"]);
        assert!(allow.status.success(), "an operator's command writes again: {}", said(&allow));

        // A crash, not a clean stop: whatever was answered must already be on disk.
        service.kill();
        let missing: Vec<&String> =
            during.issued.iter().chain(&after).filter(|opaque| !store_knows(&url, opaque)).collect();
        assert!(
            missing.is_empty(),
            "after a crash, {} of {} tokens answered with 200 are not in the store",
            missing.len(),
            during.issued.len() + after.len()
        );
    });
}
