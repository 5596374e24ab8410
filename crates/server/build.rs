//! Which test servers this build's tests are given (`crates/adapters/build/test_servers.rs`).

include!("../adapters/build/test_servers.rs");

fn main() {
    declare_test_servers();
}
