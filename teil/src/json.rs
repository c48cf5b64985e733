//! The one quoting of a string as JSON text, for the JSON the toolchain writes by hand (the
//! ops/1 form, the `teil-target/1` requests, the benchmark tables), where building a
//! `serde_json::Value` first would cost more than the text.

/// `s` as a JSON string literal, quotes included (`serde_json`'s escaping).
pub fn string(s: &str) -> String {
    // Serialising a `str` cannot fail; the fallback only keeps this total.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn quotes_and_escapes() {
        assert_eq!(super::string("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\u0001""#);
    }
}
