// Which test servers a build's tests are given, for the build scripts of `adapters` and
// `server` (both `include!` this file). A test that needs a server the environment does
// not name is compiled as ignored, so that `cargo test`'s own summary counts it
// ("N ignored") instead of a pass that ran nothing; `docs/testing.md` says how to give
// them. Under `CI=true` nothing is ignored: such a test runs, and fails for want of its
// server.

/// Sets `cfg(no_test_postgres)` / `cfg(no_test_redis)` when `TEST_POSTGRES_URL` /
/// `TEST_REDIS_URL` is not set, outside CI.
///
/// Sets `cfg(machine_tests_ignored)` outside CI: the few tests that need something of
/// the machine's own (Chromium, root for a tmpfs, PostgreSQL's programs for a server of
/// the test's own) are then compiled as ignored, and `--include-ignored` runs them. A
/// build cannot tell whether such a program is there for good: cargo reruns a build
/// script on every build while a path it watches is missing, and an install keeps the
/// package's file times.
fn declare_test_servers() {
    println!("cargo::rustc-check-cfg=cfg(no_test_postgres, no_test_redis, machine_tests_ignored)");
    println!("cargo::rerun-if-env-changed=CI");
    let in_ci = std::env::var("CI").is_ok_and(|value| value == "true");
    if !in_ci {
        println!("cargo::rustc-cfg=machine_tests_ignored");
    }
    for (variable, missing) in [("TEST_POSTGRES_URL", "no_test_postgres"), ("TEST_REDIS_URL", "no_test_redis")] {
        println!("cargo::rerun-if-env-changed={variable}");
        if !in_ci && std::env::var_os(variable).is_none_or(|value| value.is_empty()) {
            println!("cargo::rustc-cfg={missing}");
        }
    }
}
