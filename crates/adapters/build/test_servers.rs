// Which test servers a build's tests are given, for the build scripts of `adapters` and
// `server` (both `include!` this file). A test that needs a server the environment does
// not name is compiled as ignored, so that `cargo test`'s own summary counts it
// ("N ignored") instead of a pass that ran nothing; `docs/testing.md` says how to give
// them. Under `CI=true` nothing is ignored: such a test runs, and fails for want of its
// server.

/// Sets `cfg(no_test_postgres)` / `cfg(no_test_redis)` when `TEST_POSTGRES_URL` /
/// `TEST_REDIS_URL` is not set, outside CI.
fn declare_test_servers() {
    println!("cargo::rustc-check-cfg=cfg(no_test_postgres, no_test_redis)");
    println!("cargo::rerun-if-env-changed=CI");
    let in_ci = std::env::var("CI").is_ok_and(|value| value == "true");
    for (variable, missing) in [("TEST_POSTGRES_URL", "no_test_postgres"), ("TEST_REDIS_URL", "no_test_redis")] {
        println!("cargo::rerun-if-env-changed={variable}");
        if !in_ci && std::env::var_os(variable).is_none_or(|value| value.is_empty()) {
            println!("cargo::rustc-cfg={missing}");
        }
    }
}
