//! JSON written in place by the answers that copy stored JSON into their bodies (the ATM
//! states and the change feed): a value is written as it is when JSON would not escape
//! it, which identifications and brands never need.

/// Writes `text` into `body` as a JSON string: quoted as it is when it holds no byte JSON
/// escapes (a control character, `"` or `\`), through serde otherwise. Both write the
/// same bytes; the first copies them once.
pub(crate) fn push_string(body: &mut String, text: &str) {
    if text.bytes().all(|byte| byte >= 0x20 && byte != b'"' && byte != b'\\') {
        body.push('"');
        body.push_str(text);
        body.push('"');
    } else {
        // A `&str` always serializes; the fallback only keeps this total.
        body.push_str(&serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_is_written_as_serde_writes_it() {
        for text in ["GCB-AGS-0011", "Banco Ñ é /", "quote \" back \\ line\n tab\t \u{1b}", "", "\u{7f}"] {
            let mut body = String::new();
            push_string(&mut body, text);
            assert_eq!(body, serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }
}
