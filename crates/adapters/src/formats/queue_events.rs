//! Queue events as a JSON-lines file (one event object per line, the objects
//! `POST /api/v1/branches/queue-events` takes), and a replay's per-ticket CSV.

use std::io::{BufRead, Read, Write};

use domain::queue::evaluate::TicketOutcome;
use domain::queue::event::QueueEvent;

/// The longest line read: an event is a few hundred bytes; a longer line is not one.
pub const LONGEST_LINE: usize = 4096;

/// Why an events file was refused.
#[derive(Debug, thiserror::Error)]
pub enum QueueEventsFileError {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Read(#[from] std::io::Error),
    /// A line is longer than [`LONGEST_LINE`].
    #[error("line {line}: longer than {LONGEST_LINE} bytes")]
    LongLine {
        /// The line.
        line: u64,
    },
    /// A line is not one JSON value.
    #[error("line {line}: not JSON ({reason})")]
    NotJson {
        /// The line.
        line: u64,
        /// The parser's reason.
        reason: String,
    },
    /// A line is not a valid event.
    #[error("line {line}: {code}: {details}")]
    InvalidEvent {
        /// The line.
        line: u64,
        /// The refusal's code (`missingField`, `invalidField`, `unknownType`).
        code: &'static str,
        /// What was wrong.
        details: String,
    },
}

/// Reads every event of a JSON-lines file; blank lines are skipped.
///
/// # Errors
/// [`QueueEventsFileError`] at the first line that is not a valid event.
pub fn read(reader: impl Read) -> Result<Vec<QueueEvent>, QueueEventsFileError> {
    let mut reader = std::io::BufReader::new(reader);
    let mut events = Vec::new();
    let mut buffer = Vec::new();
    let mut line = 0;
    loop {
        buffer.clear();
        line += 1;
        let read = (&mut reader).take(LONGEST_LINE as u64 + 1).read_until(b'\n', &mut buffer)?;
        if read == 0 {
            return Ok(events);
        }
        if buffer.len() > LONGEST_LINE && buffer.last() != Some(&b'\n') {
            return Err(QueueEventsFileError::LongLine { line });
        }
        if buffer.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: serde_json::Value = serde_json::from_slice(&buffer)
            .map_err(|e| QueueEventsFileError::NotJson { line, reason: e.to_string() })?;
        let event = QueueEvent::from_json(&value).map_err(|refusal| QueueEventsFileError::InvalidEvent {
            line,
            code: refusal.code,
            details: refusal.details,
        })?;
        events.push(event);
    }
}

/// Writes `tickets` as CSV: `branchId,ticket,issuedAt,estimateMinutes,actualMinutes`,
/// minutes to the thousandth.
///
/// # Errors
/// The writer's error.
pub fn write_per_ticket(writer: impl Write, tickets: &[TicketOutcome]) -> std::io::Result<()> {
    let mut csv = csv::Writer::from_writer(writer);
    csv.write_record(["branchId", "ticket", "issuedAt", "estimateMinutes", "actualMinutes"])?;
    for ticket in tickets {
        csv.write_record([
            ticket.branch.digits().as_str(),
            ticket.ticket.as_str(),
            &ticket.issued_at.to_string(),
            &format!("{:.3}", ticket.estimate),
            &format!("{:.3}", ticket.actual),
        ])?;
    }
    csv.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_is_an_event_and_the_first_bad_one_is_named() {
        let file = concat!(
            r#"{"eventId":"1","branchId":"00001","type":"CounterOpened","at":"2026-11-28T09:00:00Z","counter":"1"}"#,
            "\n\n",
            r#"{"eventId":"2","branchId":"00001","type":"TicketIssued","at":"2026-11-28T09:00:01.5Z","ticket":"A,1"}"#,
            "\n",
        );
        let events = read(file.as_bytes()).unwrap();
        assert_eq!(events.len(), 2);
        let bad = format!("{file}{{\"eventId\":\"3\"}}\n");
        assert_eq!(read(bad.as_bytes()).unwrap_err().to_string(), "line 4: missingField: branchId is required");
        let not_json = format!("{file}nope\n");
        assert!(read(not_json.as_bytes()).unwrap_err().to_string().starts_with("line 4: not JSON"));
    }

    #[test]
    fn a_line_longer_than_an_event_can_be_is_refused_without_reading_it_whole() {
        let long = format!("{}\n", " ".repeat(10 * LONGEST_LINE));
        assert_eq!(read(long.as_bytes()).unwrap_err().to_string(), "line 1: longer than 4096 bytes");
    }

    #[test]
    fn the_per_ticket_file_quotes_a_ticket_that_holds_a_comma() {
        let events = read(
            concat!(
                r#"{"eventId":"1","branchId":"00001","type":"CounterOpened","at":"2026-11-28T09:00:00Z","counter":"1"}"#,
                "\n",
                r#"{"eventId":"2","branchId":"00001","type":"TicketIssued","at":"2026-11-28T09:00:01.5Z","ticket":"A,1"}"#,
                "\n",
                r#"{"eventId":"3","branchId":"00001","type":"TicketCalled","at":"2026-11-28T09:02:01.5Z","ticket":"A,1","counter":"1"}"#,
            )
            .as_bytes(),
        )
        .unwrap();
        let replay = domain::queue::evaluate::replay(events, 15.0);
        let mut out = Vec::new();
        write_per_ticket(&mut out, &replay.tickets).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "branchId,ticket,issuedAt,estimateMinutes,actualMinutes\n\
             00001,\"A,1\",2026-11-28T09:00:01.5Z,0.000,2.000\n"
        );
    }
}
