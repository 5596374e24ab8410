//! Various HTTP related types.

pub mod header;

pub use actix_http::{uri, ConnectionType, Error, KeepAlive, Method, StatusCode, Uri, Version};
