//! SIGTERM under keep-alive load: readiness fails at once, the service keeps serving
//! for the drain period with `Connection: close` on every response, then stops, and a
//! client that honours `Connection: close` loses nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::harness::{AUTHORIZE_QUERY, Service, UUID, fresh_store, run};

const DRAIN: Duration = Duration::from_secs(2);

/// What one keep-alive client saw.
#[derive(Debug, Default)]
struct Client {
    answered: usize,
    answered_while_draining: usize,
    told_to_close: usize,
    /// Requests sent that got no answer: the connection closed or reset under them.
    lost: usize,
}

#[test]
fn sigterm_under_keep_alive_load_drains_and_loses_no_request() {
    run(async {
        let Some((_kept, url)) = fresh_store().await else { return };
        let drain_ms = DRAIN.as_millis().to_string();
        let mut service = Service::start(&url, &["--shutdown-drain-ms", &drain_ms]).await;

        // Like a load balancer: once readiness fails (503, or no answer at all), no new
        // connection is opened to this instance; connections in use carry on.
        let taken_out = Arc::new(AtomicBool::new(false));
        let terminated = Arc::new(AtomicBool::new(false));
        let checker = {
            let (http, address, taken_out) = (reqwest::Client::new(), service.address.clone(), Arc::clone(&taken_out));
            tokio::spawn(async move {
                loop {
                    let probe = http.get(format!("{address}/api/health/ready")).timeout(Duration::from_secs(1));
                    let answer = match probe.send().await {
                        Ok(response) if response.status() == 200 => None,
                        Ok(response) => Some(response.text().await.unwrap_or_default()),
                        Err(error) => Some(error.to_string()),
                    };
                    if let Some(answer) = answer {
                        taken_out.store(true, Ordering::SeqCst);
                        return (Instant::now(), answer);
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };

        // Sixteen keep-alive clients, each sending its next request as soon as the last is
        // answered: mostly quick reads (the JWKS), so a connection is often between
        // requests when the signal comes, and every fourth a token, which writes.
        let clients: Vec<_> = (0..16)
            .map(|_| {
                let (address, taken_out, terminated) =
                    (service.address.clone(), Arc::clone(&taken_out), Arc::clone(&terminated));
                tokio::spawn(async move {
                    let http = reqwest::Client::builder().pool_max_idle_per_host(1).build().unwrap();
                    let mut seen = Client::default();
                    for sent in 0_usize.. {
                        let path = if sent % 4 == 3 {
                            format!("/api/v1/authorize?{AUTHORIZE_QUERY}")
                        } else {
                            "/api/.well-known/jwks.json".to_owned()
                        };
                        let call = http
                            .get(format!("{address}{path}"))
                            .header("uuid", UUID)
                            .timeout(Duration::from_secs(30))
                            .send()
                            .await;
                        let response = match call {
                            Ok(response) => response,
                            // Refused: the request was never sent. Only a balancer that
                            // ignored readiness would get here.
                            Err(error) if error.is_connect() => break,
                            Err(_) => {
                                seen.lost += 1;
                                break;
                            }
                        };
                        let closes = response.headers().get("connection").is_some_and(|value| value == "close");
                        let draining = terminated.load(Ordering::SeqCst);
                        if response.bytes().await.is_err() {
                            seen.lost += 1;
                            break;
                        }
                        seen.answered += 1;
                        seen.answered_while_draining += usize::from(draining);
                        seen.told_to_close += usize::from(closes);
                        if closes && taken_out.load(Ordering::SeqCst) {
                            break;
                        }
                    }
                    seen
                })
            })
            .collect();

        tokio::time::sleep(Duration::from_secs(1)).await;
        terminated.store(true, Ordering::SeqCst);
        let signalled = Instant::now();
        service.terminate();
        let exit = service.exits_within(DRAIN + Duration::from_secs(15)).await;
        let stopped_after = signalled.elapsed();
        let (taken_out_at, readiness_said) = checker.await.unwrap();
        assert!(taken_out_at >= signalled, "readiness failed before the signal: {readiness_said}");
        assert_eq!(readiness_said, r#"{"status":"draining"}"#, "readiness says why it fails");
        let taken_out_after = taken_out_at - signalled;

        let mut total = Client::default();
        for client in clients {
            let client = client.await.unwrap();
            total.answered += client.answered;
            total.answered_while_draining += client.answered_while_draining;
            total.told_to_close += client.told_to_close;
            total.lost += client.lost;
        }
        eprintln!(
            "figure: SIGTERM drain ({} ms): readiness failed after {} ms, exit after {} ms; {total:?}",
            DRAIN.as_millis(),
            taken_out_after.as_millis(),
            stopped_after.as_millis()
        );
        assert_eq!(total.lost, 0, "no request sent on a keep-alive connection is lost: {total:?}");
        assert!(
            exit.is_some_and(|status| status.success()),
            "a clean exit within the drain period plus 15 s: {exit:?}"
        );
        assert!(stopped_after >= DRAIN, "it kept serving for the drain period, stopped after {stopped_after:?}");
        assert!(taken_out_after < Duration::from_millis(500), "readiness failed {taken_out_after:?} after SIGTERM");
        assert!(total.answered_while_draining >= 16, "requests already on their way were answered: {total:?}");
        assert!(total.told_to_close >= 16, "each keep-alive client was told to close: {total:?}");
    });
}
