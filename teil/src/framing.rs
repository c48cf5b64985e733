//! Length-prefixed input, read with a cap: the one reader of messages framed as LSP and
//! JSON-RPC frame them (`Content-Length: N\r\n\r\n` then N bytes), for `teil lsp` and any other
//! reader of such a stream (spec/limits.md, "Language server").
//!
//! Nothing is allocated before the length has been checked against the cap, and the header is
//! read in lines of at most [`MAX_HEADER_BYTES`] in all, so that a hostile or broken stream
//! costs at most `max + MAX_HEADER_BYTES` bytes of memory, whatever it claims.
//!
//! **Architecture Invariant:** after an error that [`FrameError::is_resumable`], the reader is
//! at the start of the next message: the offending message was framed (its length known) and
//! its body has been skipped without being stored.

use std::io::{self, BufRead, Read, Write};

/// The default cap on one message's body: 64 MiB. A `didOpen` of a file carries the file, and
/// 64 MiB of source is far beyond any program a person writes.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// The cap on a message's header, all its lines together: 8 KiB. LSP's header has two fields.
pub const MAX_HEADER_BYTES: usize = 8 << 10;

/// Why no message was read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Reading failed; nothing more can be read.
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    /// The input ended inside a message (in its header or its body).
    #[error("the input ended inside a message")]
    Truncated,
    /// A header that gives no usable length (none, not a number, two different ones) or that
    /// is longer than [`MAX_HEADER_BYTES`]: where the next message starts is unknown.
    #[error("malformed header: {0}")]
    Header(String),
    /// A framed message that was skipped: a length over the cap, or a malformed header field
    /// beside a valid `Content-Length`. The next message can be read.
    #[error("{0}")]
    Skipped(String),
}

impl FrameError {
    /// Whether the next message can be read after this error.
    pub fn is_resumable(&self) -> bool {
        matches!(self, FrameError::Skipped(_))
    }
}

/// Reads one message's body: `Ok(None)` at the end of the input between messages. The header
/// is LSP's: lines `Name: value` ending in `\r\n`, names case-insensitive, then an empty line;
/// only `Content-Length` is read (`Content-Type` and others are accepted and ignored). A body
/// longer than `max` bytes is skipped (read and dropped, never stored) and reported as
/// [`FrameError::Skipped`].
pub fn read_frame(r: &mut impl BufRead, max: usize) -> Result<Option<Vec<u8>>, FrameError> {
    let mut length: Option<u64> = None;
    let mut malformed: Option<String> = None;
    let mut header_left = MAX_HEADER_BYTES;
    let mut line = Vec::new();
    let mut first = true;
    loop {
        line.clear();
        // One byte over what is left tells a line that is too long from one that fits.
        let n = r
            .by_ref()
            .take(header_left as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return if first {
                Ok(None)
            } else {
                Err(FrameError::Truncated)
            };
        }
        first = false;
        if n > header_left {
            return Err(FrameError::Header(format!(
                "the header is longer than {MAX_HEADER_BYTES} bytes"
            )));
        }
        header_left -= n;
        if !line.ends_with(b"\n") {
            return Err(FrameError::Truncated);
        }
        if line == b"\r\n" {
            break;
        }
        let field = match line.strip_suffix(b"\r\n") {
            Some(f) => f,
            None => {
                malformed.get_or_insert_with(|| "a header line must end in `\\r\\n`".into());
                line.strip_suffix(b"\n").unwrap_or(&line)
            }
        };
        let text = String::from_utf8_lossy(field);
        let Some((name, value)) = text.split_once(':') else {
            malformed.get_or_insert_with(|| format!("`{}` is not `Name: value`", text.trim()));
            continue;
        };
        if !name.trim().eq_ignore_ascii_case("Content-Length") {
            continue;
        }
        let value = value.trim();
        let n: u64 = value.parse().map_err(|_| {
            FrameError::Header(format!(
                "`Content-Length: {value}` is not a length in bytes"
            ))
        })?;
        if length.is_some_and(|l| l != n) {
            return Err(FrameError::Header("two different `Content-Length`s".into()));
        }
        length = Some(n);
    }
    let Some(length) = length else {
        return Err(FrameError::Header("no `Content-Length`".into()));
    };
    if length > max as u64 || malformed.is_some() {
        let skipped = io::copy(&mut r.by_ref().take(length), &mut io::sink())?;
        if skipped < length {
            return Err(FrameError::Truncated);
        }
        return Err(FrameError::Skipped(malformed.unwrap_or_else(|| {
            format!("a message of {length} bytes is larger than the maximum of {max} bytes")
        })));
    }
    // `length <= max`: the allocation is bounded by the cap.
    let mut body = vec![0; length as usize];
    r.read_exact(&mut body).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => FrameError::Truncated,
        _ => FrameError::Io(e),
    })?;
    Ok(Some(body))
}

/// Writes one message: its header and `body`.
pub fn write_frame(w: &mut impl Write, body: &[u8]) -> io::Result<()> {
    write!(w, "Content-Length: {}\r\n\r\n", body.len())?;
    w.write_all(body)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn read_all(input: &[u8], max: usize) -> Vec<Result<String, String>> {
        let mut r = Cursor::new(input);
        let mut out = Vec::new();
        loop {
            match read_frame(&mut r, max) {
                Ok(Some(b)) => out.push(Ok(String::from_utf8(b).unwrap())),
                Ok(None) => return out,
                Err(e) => {
                    let go_on = e.is_resumable();
                    out.push(Err(e.to_string()));
                    if !go_on {
                        return out;
                    }
                }
            }
        }
    }

    #[test]
    fn messages_are_read_in_turn_and_the_end_is_clean() {
        let input = b"Content-Length: 2\r\n\r\n{}content-length:3\r\nContent-Type: x\r\n\r\n[1]";
        assert_eq!(read_all(input, 10), [Ok("{}".into()), Ok("[1]".into())]);
        let mut w = Vec::new();
        write_frame(&mut w, b"{}").unwrap();
        assert_eq!(w, b"Content-Length: 2\r\n\r\n{}");
    }

    #[test]
    fn a_length_over_the_cap_is_skipped_and_the_next_message_read() {
        let input = b"Content-Length: 11\r\n\r\n[1,2,3,4,5]Content-Length: 2\r\n\r\n{}";
        assert_eq!(
            read_all(input, 10),
            [
                Err("a message of 11 bytes is larger than the maximum of 10 bytes".into()),
                Ok("{}".into())
            ]
        );
    }

    #[test]
    fn huge_lengths_allocate_nothing() {
        // 3e10 and 2^63 bytes are claimed; the input ends while the body is skipped.
        for n in ["30000000000", "9223372036854775808", "18446744073709551615"] {
            let input = format!("Content-Length: {n}\r\n\r\n{{}}");
            assert_eq!(
                read_all(input.as_bytes(), MAX_MESSAGE_BYTES),
                [Err("the input ended inside a message".into())]
            );
        }
        // Past u64: not a length.
        assert_eq!(
            read_all(b"Content-Length: 18446744073709551616\r\n\r\n{}", 10),
            [Err(
                "malformed header: `Content-Length: 18446744073709551616` is not a length in bytes"
                    .into()
            )]
        );
    }

    #[test]
    fn a_malformed_field_beside_a_length_skips_one_message() {
        let input = b"Content-Length: 2\r\nnonsense\r\n\r\n{}Content-Length: 1\n\r\n1\
                      Content-Length: 2\r\n\r\nok";
        assert_eq!(
            read_all(input, 10),
            [
                Err("`nonsense` is not `Name: value`".into()),
                Err("a header line must end in `\\r\\n`".into()),
                Ok("ok".into())
            ]
        );
    }

    #[test]
    fn a_header_without_a_usable_length_ends_the_stream() {
        let cases: [(&[u8], &str); 5] = [
            (
                b"{\"jsonrpc\": \"2.0\"}\r\n\r\n",
                "malformed header: no `Content-Length`",
            ),
            (
                b"Content-Length: -1\r\n\r\n",
                "malformed header: `Content-Length: -1` is not a length in bytes",
            ),
            (
                b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                "malformed header: two different `Content-Length`s",
            ),
            (b"Content-Length: 2\r\n", "the input ended inside a message"),
            (
                b"Content-Length: 5\r\n\r\n{}",
                "the input ended inside a message",
            ),
        ];
        for (input, error) in cases {
            assert_eq!(read_all(input, 10), [Err(error.to_string())], "{input:?}");
        }
        let long = format!("X-Long: {}\r\n\r\n", "x".repeat(MAX_HEADER_BYTES));
        assert_eq!(
            read_all(long.as_bytes(), 10),
            [Err(
                "malformed header: the header is longer than 8192 bytes".into()
            )]
        );
    }
}
