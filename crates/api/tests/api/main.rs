//! Black-box tests: the real application on port 0, through the real HTTP stack.

mod authorize;
mod cli;
mod helpers;
mod routes;
mod tls;
mod tokens;
mod wait_times;
