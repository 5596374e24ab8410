//! Malformed requests from outside are not errors of the service: they are answered by
//! the HTTP parser and summarised in the log, not written one ERROR line each. The
//! summary is a WARN line, so an operator logging at `warn` still sees it.

use std::io::{Read as _, Write as _};
use std::time::Duration;

use crate::harness::{Service, fresh_store, run};

#[test]
fn a_burst_of_malformed_requests_is_one_warning_not_an_error_each() {
    run(async {
        let Some((_kept, url)) = fresh_store().await else { return };
        let service = Service::start(&url, &["--log-filter", "warn"]).await;
        let port = service.address.rsplit(':').next().unwrap().to_owned();
        for _ in 0..50 {
            let mut connection = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
            connection.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            connection.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: many\r\n\r\n").unwrap();
            let mut answer = String::new();
            let _ = connection.read_to_string(&mut answer);
            assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        }
        tokio::time::sleep(Duration::from_millis(2_500)).await;

        let log = service.log();
        let errors: Vec<&String> = log.iter().filter(|line| line.contains(r#""level":"ERROR""#)).collect();
        assert!(errors.is_empty(), "no ERROR line for a client's malformed request: {errors:#?}");
        let summaries: Vec<&String> = log.iter().filter(|line| line.contains("malformed_requests")).collect();
        assert_eq!(summaries.len(), 1, "one summary line: {summaries:#?}");
        assert!(summaries[0].contains(r#""level":"WARN""#), "{}", summaries[0]);
        assert!(summaries[0].contains("request parse error"), "it says why: {}", summaries[0]);
    });
}
