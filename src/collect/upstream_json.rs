//! The upstreams' JSON answers are read with the one JSON tokenizer, `util::json::scan`,
//! as they stream; here its errors become the source's.

use std::io;

pub(crate) use crate::util::json::scan::{Next, ScanError, Scanner};

use super::fetch::SourceError;

/// A value the caller refused (too many ...), as a scan error.
pub(crate) fn failed(e: SourceError) -> ScanError {
    ScanError::Failed(io::Error::other(e))
}

/// Turns a scan error into the source's error: `not JSON` (with what the answer looks
/// like: `an HTML page`, never its text) or `not the <what> JSON shape`; read errors
/// as they are.
pub(crate) fn bad_body(e: ScanError, what: &str, start: &[u8]) -> SourceError {
    match e {
        ScanError::Failed(e) => super::fetcher::from_io(e),
        ScanError::Syntax(m, at) => SourceError::BadBody(format!(
            "not JSON ({m} at byte {at}): {}",
            super::fetch::looks_like(start)
        )),
        ScanError::Shape(m) => SourceError::BadBody(format!("not the {what} JSON shape ({m})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_snippets() {
        let mut r: &[u8] = b"[1]";
        let mut s = Scanner::new(&mut r);
        let e = s.begin_object().unwrap_err();
        let e = bad_body(e, "RIPEstat", s.start());
        assert_eq!(
            e.to_string(),
            "unexpected answer: not the RIPEstat JSON shape (expected an object at byte 0, \
             found a list)"
        );
        let mut r: &[u8] = b"<html>maintenance</html>";
        let mut s = Scanner::new(&mut r);
        let e = bad_body(s.begin_object().unwrap_err(), "RIPEstat", s.start());
        assert_eq!(
            e.to_string(),
            "unexpected answer: not JSON (expected value at byte 0): an HTML page"
        );
    }
}
