mod builder;
mod customize_responder;
mod http_codes;
mod responder;
#[allow(clippy::module_inception)]
mod response;

pub use self::{
    builder::HttpResponseBuilder, customize_responder::CustomizeResponder, responder::Responder,
    response::HttpResponse,
};
