// Which tests a build compiles as ignored, for the build scripts of `adapters` and
// `server` (both `include!` this file).
//
// Tests that need a server (PostgreSQL, Redis) are not among them: they are decided at
// run time, so setting `TEST_POSTGRES_URL` or `TEST_REDIS_URL` recompiles nothing. Such
// a test prints `SKIPPED:` with the variable that runs it and returns when its variable
// is not set, and fails under `CI=true` (`adapters::testing::fresh_store_url`, and each
// Redis test's `redis_url`).

/// Sets `cfg(machine_tests_ignored)` outside CI: the few tests that need something of
/// the machine's own (Chromium, Node.js and the npm registry, root for a tmpfs, PostgreSQL's programs for a server of
/// the test's own, HAProxy, or a quiet machine for a measurement of memory) are then
/// compiled as ignored, and `--include-ignored` runs them. A
/// build cannot tell whether such a program is there for good: cargo reruns a build
/// script on every build while a path it watches is missing, and an install keeps the
/// package's file times.
fn declare_test_servers() {
    println!("cargo::rustc-check-cfg=cfg(machine_tests_ignored)");
    println!("cargo::rerun-if-env-changed=CI");
    let in_ci = std::env::var("CI").is_ok_and(|value| value == "true");
    if !in_ci {
        println!("cargo::rustc-cfg=machine_tests_ignored");
    }
}
