//! What a line is, defined once: the [`LineIndex`] every surface converts positions with (text
//! and JSON diagnostics, `Diagnostic.line` in Python, the language server, the playground).
//!
//! A line ends at `\n`, `\r\n` or `\r`, and at nothing else: LSP 3.17's definition ("Text
//! Documents": "the protocol supports the following end-of-line sequences: `\n`, `\r\n` and
//! `\r`"). U+2028, U+2029, U+0085, `\x0b` and `\x0c` are characters on a line like any other
//! (spec/grammar.md, "Lines").
//!
//! Positions are byte offsets inside TeIL. A column is counted in one of two units: characters
//! (1-based, for people: `FILE:LINE:COL`, JSON `column`) or UTF-16 code units (0-based, LSP's
//! `character`). The index keeps the start of every line and running counts of both units every
//! 256 bytes, so that the column of any offset costs a binary search and a scan of at most
//! one block, whatever the length of its line: N positions on one long line cost O(N log n),
//! not O(N * line).

/// Line starts and running character and UTF-16 counts of one text.
#[derive(Clone, Debug)]
pub struct LineIndex {
    /// The byte offset at which each line starts; the first is 0.
    starts: Vec<usize>,
    /// `chars[k]`, `utf16[k]`: characters and UTF-16 code units in the first `k * BLOCK` bytes.
    chars: Vec<usize>,
    utf16: Vec<usize>,
    len: usize,
}

/// Granularity of the running counts: a column costs at most one scan of this many bytes.
const BLOCK: usize = 256;

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        for (i, &b) in bytes.iter().enumerate() {
            let ends = b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n'));
            if ends {
                starts.push(i + 1);
            }
        }
        let blocks = bytes.len() / BLOCK + 1;
        let (mut chars, mut utf16) = (Vec::with_capacity(blocks), Vec::with_capacity(blocks));
        let (mut c, mut u) = (0, 0);
        chars.push(0);
        utf16.push(0);
        for block in bytes.chunks(BLOCK) {
            c += count_chars(block);
            u += count_utf16(block);
            chars.push(c);
            utf16.push(u);
        }
        LineIndex {
            starts,
            chars,
            utf16,
            len: text.len(),
        }
    }

    /// The number of lines (at least 1: an empty text has one empty line).
    pub fn lines(&self) -> usize {
        self.starts.len()
    }

    /// The 0-based line of a byte offset (an offset past the end is on the last line).
    pub fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset) - 1
    }

    /// The byte offset where a 0-based line starts, `None` past the last line.
    pub fn line_start(&self, line: usize) -> Option<usize> {
        self.starts.get(line).copied()
    }

    /// The byte offset where a 0-based line's text ends, before its line end.
    pub fn line_end(&self, text: &str, line: usize) -> Option<usize> {
        let start = self.line_start(line)?;
        let Some(&next) = self.starts.get(line + 1) else {
            return Some(self.len.max(start));
        };
        let b = text.as_bytes();
        let end = if next >= 2 && b.get(next - 2..next) == Some(b"\r\n") {
            next - 2
        } else {
            next - 1
        };
        Some(end.max(start))
    }

    /// 1-based line and column (in characters) of a byte offset: `FILE:LINE:COL` and the JSON
    /// diagnostics. An offset past the end or inside a character counts as the nearest
    /// character boundary before it.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = floor_boundary(text, offset);
        let line = self.line(offset);
        let col = self.chars_before(text, offset) - self.chars_before(text, self.starts[line]);
        (line + 1, col + 1)
    }

    /// The LSP position (0-based line, UTF-16 column) of a byte offset; an offset past the end
    /// or inside a character is moved back to the nearest character boundary.
    pub fn position(&self, text: &str, offset: usize) -> (u32, u32) {
        let offset = floor_boundary(text, offset);
        let line = self.line(offset);
        let col = self.utf16_before(text, offset) - self.utf16_before(text, self.starts[line]);
        (clamp_u32(line), clamp_u32(col))
    }

    /// The byte offset of an LSP position. A column past the end of its line means the end of
    /// the line (as LSP specifies), a line past the last the end of the text, and a column
    /// inside a surrogate pair the start of that character.
    pub fn offset(&self, text: &str, line: u32, utf16_col: u32) -> usize {
        let line = line as usize;
        let (Some(start), Some(end)) = (self.line_start(line), self.line_end(text, line)) else {
            return self.len;
        };
        let target = self.utf16_before(text, start) + utf16_col as usize;
        if target >= self.utf16_before(text, end) {
            return end;
        }
        self.utf16_offset(text, target)
    }

    /// The UTF-16 code units in `text[..offset]`: a JavaScript string index. An offset past
    /// the end or inside a character is moved back to the nearest character boundary.
    pub fn utf16_index(&self, text: &str, offset: usize) -> usize {
        self.utf16_before(text, floor_boundary(text, offset))
    }

    /// The byte offset of a UTF-16 index from the start of the text (the inverse of
    /// [`LineIndex::utf16_index`]): past the end means the end, inside a surrogate pair the
    /// start of that character.
    pub fn utf16_offset(&self, text: &str, units: usize) -> usize {
        // The last block boundary at or before the target, then a scan of at most one block.
        let k = self.utf16.partition_point(|&u| u <= units) - 1;
        let mut at = floor_boundary(text, k * BLOCK);
        let mut seen = self.utf16_before(text, at);
        for c in text[at..].chars() {
            let w = c.len_utf16();
            if seen + w > units {
                break;
            }
            seen += w;
            at += c.len_utf8();
        }
        at
    }

    /// The number of characters in `text[..offset]`, `offset` a character boundary.
    pub fn chars_before(&self, text: &str, offset: usize) -> usize {
        let block = offset / BLOCK;
        self.chars[block] + count_chars(&text.as_bytes()[block * BLOCK..offset])
    }

    /// The number of UTF-16 code units in `text[..offset]`, `offset` a character boundary.
    fn utf16_before(&self, text: &str, offset: usize) -> usize {
        let block = offset / BLOCK;
        self.utf16[block] + count_utf16(&text.as_bytes()[block * BLOCK..offset])
    }
}

fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

fn clamp_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Characters in a run of UTF-8 bytes: the bytes that are not continuation bytes.
fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

/// UTF-16 code units in a run of UTF-8 bytes: one per leading byte, two for the leading byte of
/// a 4-byte sequence (a character outside the Basic Multilingual Plane, a surrogate pair).
fn count_utf16(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .map(|&b| match b {
            0xF0.. => 2,
            _ if b & 0xC0 == 0x80 => 0,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_lf_crlf_and_lone_cr_only() {
        let text = "a\rb\r\nc\nd\u{2028}e\x0bf\x0cg\u{85}h";
        let ix = LineIndex::new(text);
        assert_eq!(ix.lines(), 4);
        assert_eq!(ix.line_start(1), Some(2));
        assert_eq!(ix.line_start(2), Some(5));
        assert_eq!(ix.line_start(3), Some(7));
        assert_eq!(ix.line_end(text, 0), Some(1));
        assert_eq!(ix.line_end(text, 1), Some(3));
        assert_eq!(ix.line_end(text, 3), Some(text.len()));
        let h = text.find('h').unwrap();
        // `d`, U+2028, `e`, \x0b, `f`, \x0c, `g`, U+0085: eight characters before `h`.
        assert_eq!(ix.line_col(text, h), (4, 9));
        assert_eq!(ix.position(text, h), (3, 8));
        assert_eq!(ix.offset(text, 3, 8), h);
        assert_eq!(ix.offset(text, 1, 99), 3);
        assert_eq!(ix.offset(text, 9, 0), text.len());
    }

    #[test]
    fn utf16_positions_round_trip_through_emoji_and_accents() {
        // `é` is 2 bytes and 1 UTF-16 unit; `🦀` is 4 bytes and 2 units (a surrogate pair).
        let text = "// é🦀x\nA = B // 🦀\r\nC";
        let ix = LineIndex::new(text);
        assert_eq!(ix.position(text, 0), (0, 0));
        let x = text.find('x').unwrap();
        assert_eq!(ix.position(text, x), (0, 6)); // "// " 3 + é 1 + 🦀 2
        assert_eq!(ix.offset(text, 0, 6), x);
        // A column inside the surrogate pair means the start of the emoji.
        let crab = text.find('🦀').unwrap();
        assert_eq!(ix.offset(text, 0, 5), crab);
        assert_eq!(ix.offset(text, 0, 4), crab);
        // An offset inside the emoji moves back to its start.
        assert_eq!(ix.position(text, crab + 2), (0, 4));
        // Past the end of a line (the `\r\n` excluded): the line's end.
        let line1_end = text.find('\r').unwrap();
        assert_eq!(ix.offset(text, 1, 99), line1_end);
        assert_eq!(ix.position(text, line1_end), (1, 11)); // "A = B // " 9 + 🦀 2
                                                           // Past the last line: the end of the text.
        assert_eq!(ix.offset(text, 7, 0), text.len());
        assert_eq!(ix.position(text, text.len() + 5), (2, 1));
        assert_eq!(ix.offset(text, 2, 0), text.len() - 1);
        assert_eq!(ix.line_col(text, x), (1, 6)); // five characters before `x`
    }

    #[test]
    fn empty_text_has_one_line() {
        let ix = LineIndex::new("");
        assert_eq!(ix.position("", 3), (0, 0));
        assert_eq!(ix.offset("", 0, 5), 0);
        assert_eq!(ix.offset("", 1, 0), 0);
        assert_eq!(ix.line_col("", 0), (1, 1));
    }

    #[test]
    fn columns_across_blocks_agree_with_a_plain_count() {
        // Multi-byte characters straddling the block boundaries, on one long line.
        let text = format!("x\n{}", "é🦀a".repeat(700));
        let ix = LineIndex::new(&text);
        let mut units = 0u32;
        for (chars, (i, c)) in (1usize..).zip(text[2..].char_indices()) {
            let at = i + 2;
            assert_eq!(ix.position(&text, at), (1, units));
            assert_eq!(ix.line_col(&text, at), (2, chars));
            assert_eq!(ix.offset(&text, 1, units), at);
            if c.len_utf16() == 2 {
                // Inside the surrogate pair: the start of the character.
                assert_eq!(ix.offset(&text, 1, units + 1), at);
            }
            units += c.len_utf16() as u32;
        }
        assert_eq!(ix.offset(&text, 1, units + 5), text.len());
    }

    #[test]
    fn utf16_indices_are_javascript_string_indices_both_ways() {
        // ASCII, 2-, 3- and 4-byte characters (the last a surrogate pair in UTF-16), long
        // enough to cross several blocks.
        let text = "aé€😀\n".repeat(100);
        let ix = LineIndex::new(&text);
        let (mut units, mut byte) = (0, 0);
        for c in text.chars() {
            assert_eq!(ix.utf16_index(&text, byte), units);
            assert_eq!(ix.utf16_offset(&text, units), byte);
            if c.len_utf16() == 2 {
                // Between the halves of a pair: the start of the character.
                assert_eq!(ix.utf16_offset(&text, units + 1), byte);
            }
            // Inside a character: the boundary before it.
            assert_eq!(ix.utf16_index(&text, byte + c.len_utf8() - 1), units);
            units += c.len_utf16();
            byte += c.len_utf8();
        }
        assert_eq!(ix.utf16_index(&text, text.len() + 9), units);
        assert_eq!(ix.utf16_offset(&text, units + 9), text.len());
    }
}
