//! HTTP/1.1 message framing shared by the API server (`api`) and the collect client
//! (`collect`): the one head limit, the one `Content-Length` parser, the one chunked
//! decoder. Both sides parse the same wire format, so both read it the same strict
//! way; a server that reads a length differently from a proxy in front of it is how
//! requests get smuggled, and a client that takes a broken answer for a transient
//! failure retries it forever.
//!
//! No sockets here: [`Chunked`] is fed whatever bytes the caller has buffered and
//! says how many it used, so the server's poll loop (non-blocking) and the client
//! (blocking, through a buffer) drive it alike.

pub(crate) mod chunked;

pub use chunked::{
    read_chunked, ChunkError, Chunked, ReadError, Step, MAX_CHUNK_LINE, MAX_TRAILER,
};

/// Longest message head (request or status line and headers, with the blank line)
/// read by the server and the client: 8 KiB. A caller never buffers more than this
/// of a head.
pub const MAX_HEAD: usize = 8 * 1024;

/// Most header fields in one head.
pub const MAX_HEADERS: usize = 64;

/// How the end of a message body is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length` bytes (0: no body).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the sender closes the connection (responses only).
    Close,
}

/// A `Content-Length` that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LengthError {
    /// Not a decimal number: empty, a sign, spaces or other bytes inside.
    #[error("invalid Content-Length {0:?} (digits only)")]
    Invalid(String),
    /// More digits than a 64-bit length holds.
    #[error("Content-Length {0:?} is too large")]
    Overflow(String),
    /// Several `Content-Length` fields that disagree: the framing is unknown.
    #[error("conflicting Content-Length headers {0:?} and {1:?}")]
    Conflict(String, String),
}

/// Parses one `Content-Length` value, surrounding whitespace already trimmed:
/// ASCII digits only (RFC 9110, 8.6), so no `+`, no `-`, no spaces inside, no
/// `0x`; more than `u64` holds is an error, never wrapped.
pub fn parse_length(value: &str) -> Result<u64, LengthError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(LengthError::Invalid(excerpt(value)));
    }
    value
        .bytes()
        .try_fold(0u64, |n, d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
        .ok_or_else(|| LengthError::Overflow(excerpt(value)))
}

/// The body length of all `Content-Length` fields of one message: `None` without
/// any; repeated equal values count as one (RFC 9112, 6.3), different ones are an
/// error.
pub fn content_length<'a>(
    values: impl IntoIterator<Item = &'a str>,
) -> Result<Option<u64>, LengthError> {
    let mut first: Option<(&str, u64)> = None;
    for v in values {
        let v = v.trim_matches([' ', '\t']);
        let n = parse_length(v)?;
        match first {
            None => first = Some((v, n)),
            Some((f, m)) if m != n => {
                return Err(LengthError::Conflict(excerpt(f), excerpt(v)));
            }
            Some(_) => {}
        }
    }
    Ok(first.map(|(_, n)| n))
}

/// At most 40 characters of a value for an error message: what a peer sent may be
/// long, and the message only needs to show what it was.
fn excerpt(value: &str) -> String {
    match value.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &value[..i]),
        None => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_digits_only() {
        assert_eq!(parse_length("0"), Ok(0));
        assert_eq!(parse_length("0012"), Ok(12));
        assert_eq!(parse_length("18446744073709551615"), Ok(u64::MAX));
        for bad in ["", "+5", "-5", "5 5", " 5", "0x10", "1e3", "5.0", "٣"] {
            assert!(
                matches!(parse_length(bad), Err(LengthError::Invalid(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse_length("18446744073709551616"),
            Err(LengthError::Overflow(_))
        ));
        let e = parse_length(&"9".repeat(1000)).unwrap_err().to_string();
        assert!(e.len() < 100, "{e}");
    }

    #[test]
    fn repeated_lengths() {
        assert_eq!(content_length([]), Ok(None));
        assert_eq!(content_length(["3", " 3\t"]), Ok(Some(3)));
        assert_eq!(
            content_length(["3", "4"]),
            Err(LengthError::Conflict("3".into(), "4".into()))
        );
        assert!(content_length(["3", "+3"]).is_err());
    }
}
