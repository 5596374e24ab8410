//! DPoP at the edge (RFC 9449): the proof a request presents, and the nonces its answer
//! hands out. Whether a proof is good is the domain's (`domain::services::dpop`); what
//! reaches the wire is here.
//!
//! Every `DPoP-Nonce` an answer carries is put there by [`Nonces`], the middleware of the
//! operations that take a proof: the one a refusal asks the app to use
//! (`use_dpop_nonce`), or else, on an answer that is not a refusal, a fresh one when
//! server nonces are on and the request sent a proof (RFC 9449 §8.2: an app then always
//! holds a current nonce, and is not refused once a minute for want of one).

use std::future::{Future, Ready, ready};
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::HttpRequest;
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::Method;
use actix_web::http::header::HeaderValue;
use domain::dpop::ProofRefusal;
use domain::services::dpop::PresentedProof;

use crate::errors::ApiError;
use crate::headers::{DPOP, DPOP_NONCE, single_header};
use crate::state::AppState;

/// The DPoP proof a request sends, if any, with what it must name: the request's method
/// and the resource's URL under the public base URL (without query).
///
/// # Errors
/// [`ProofRefusal::Count`] when the header is sent twice; [`ProofRefusal::Malformed`]
/// when it is not text.
pub fn presented_proof(request: &HttpRequest, public_base_url: &str) -> Result<Option<PresentedProof>, ProofRefusal> {
    let Some(value) = single_header(request.headers(), &DPOP).map_err(|_| ProofRefusal::Count)? else {
        return Ok(None);
    };
    let proof = value.to_str().map_err(|_| ProofRefusal::Malformed("the DPoP header is not visible ASCII"))?;
    let method = match *request.method() {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::HEAD => "HEAD",
        // No operation takes another method with a token.
        _ => "",
    };
    Ok(Some(PresentedProof { proof: proof.to_owned(), method, uri: format!("{public_base_url}{}", request.path()) }))
}

/// The middleware of the operations that take a proof: it puts the `DPoP-Nonce` on
/// their answers (as the module says). A `Transform` of its own rather than
/// `middleware::from_fn`, which boxes the future of the service it wraps: that cost the
/// token request and the ATM page about 2,000 instructions a request each (callgrind,
/// issue 43).
#[derive(Debug, Clone, Copy, Default)]
pub struct Nonces;

impl<S, B> Transform<S, ServiceRequest> for Nonces
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
    S::Future: Unpin,
{
    type Response = ServiceResponse<B>;
    type Error = actix_web::Error;
    type Transform = NoncesService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(NoncesService { service }))
    }
}

/// [`Nonces`] around the service of one resource.
#[derive(Debug)]
pub struct NoncesService<S> {
    service: S,
}

impl<S, B> Service<ServiceRequest> for NoncesService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
    S::Future: Unpin,
{
    type Response = ServiceResponse<B>;
    type Error = actix_web::Error;
    type Future = Answered<S::Future>;

    actix_web::dev::forward_ready!(service);

    fn call(&self, request: ServiceRequest) -> Self::Future {
        Answered(self.service.call(request))
    }
}

/// The answer of the wrapped service, given its nonce when it is ready.
#[derive(Debug)]
pub struct Answered<F>(F);

impl<F, B> Future for Answered<F>
where
    F: Future<Output = Result<ServiceResponse<B>, actix_web::Error>> + Unpin,
{
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(context).map_ok(with_nonce)
    }
}

/// `response` with its `DPoP-Nonce`: the refusal's own (`use_dpop_nonce`), or a fresh
/// one on an answer below 400 to a request with a proof while server nonces are on.
/// Other refusals, and every answer without nonces on, go out as they are.
fn with_nonce<B>(mut response: ServiceResponse<B>) -> ServiceResponse<B> {
    let nonce = match response.response().error() {
        Some(error) => error
            .as_error::<ApiError>()
            .and_then(ApiError::dpop_nonce)
            .and_then(|nonce| HeaderValue::from_str(nonce).ok()),
        None if response.status().as_u16() < 400 => fresh_nonce(response.request()),
        None => None,
    };
    if let Some(nonce) = nonce {
        response.headers_mut().insert(DPOP_NONCE, nonce);
    }
    response
}

/// A fresh nonce for the answer to `request`, when server nonces are on and it sent a
/// proof.
fn fresh_nonce(request: &HttpRequest) -> Option<HeaderValue> {
    let nonces = AppState::of(request).ok()?.dpop_nonces.as_ref()?;
    if !request.headers().contains_key(DPOP.key()) {
        return None;
    }
    HeaderValue::from_str(&nonces.issue()?).ok()
}
