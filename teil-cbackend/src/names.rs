//! C identifiers for TeIL variables and backend-internal names.
//!
//! TeIL identifiers are `[A-Za-z_][A-Za-z0-9_]*`, but some of them are not usable as C names:
//! keywords of any C standard (`int`, `restrict`, `_Bool`, `bool`), reserved identifiers
//! (anything starting with `_`), `main`, macros GCC predefines in its GNU modes (`linux`,
//! `unix`), and the names the generated code uses itself (`i0`, `acc0`, `tmp0`, `teil_*`).
//! Those are mangled to `v_NAME` (with a numeric suffix if that is taken too). Everything else is
//! kept verbatim so the output stays readable.
//!
//! TeIL identifiers have no length limit, but C99 (§5.2.4.1) guarantees only
//! [`MAX_SIGNIFICANT`] significant initial characters in an internal identifier: two long names
//! sharing their first 63 characters may be one name to a conforming compiler. A name longer
//! than that becomes `v_PREFIX` (`vK_PREFIX` if taken), where `PREFIX` is the first
//! [`LONG_PREFIX`] characters; every name handed out is then distinct within its first 63
//! characters. The kernel's header comment lists each parameter's TeIL name beside its C name.
//!
//! Standard headers are included only at the end of the translation unit, after every kernel,
//! so macros they define can never capture a variable name.

use std::collections::BTreeSet;

const KEYWORDS: &[&str] = &[
    // C89/C99
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    // C23 spellings and common extensions
    "alignas",
    "alignof",
    "bool",
    "constexpr",
    "false",
    "nullptr",
    "static_assert",
    "thread_local",
    "true",
    "typeof",
    "typeof_unqual",
    "asm",
    "fortran",
    // special or predefined in GNU modes / other platforms
    "main",
    "linux",
    "unix",
    "i386",
    "i486",
    "i586",
    "i686",
    "sun",
    "sparc",
    "mips",
    "vax",
    "hppa",
];

/// Whether `s` is a C identifier the generated code may not use for a variable.
pub fn is_unusable(s: &str) -> bool {
    let valid = s
        .bytes()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    !valid || s.starts_with('_') || KEYWORDS.contains(&s) || is_internal(s)
}

/// Names the generated code uses for its own locals and helpers.
fn is_internal(s: &str) -> bool {
    if s.starts_with("teil_") {
        return true;
    }
    ["i", "acc", "tmp", "k"].iter().any(|p| {
        s.strip_prefix(p)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_digit()))
    })
}

/// Why `name` cannot be the kernel's function name, if it cannot.
pub fn check_function_name(name: &str) -> Result<(), &'static str> {
    let valid = name
        .bytes()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    if !valid {
        return Err("a C identifier is a letter or `_` followed by letters, digits and `_`");
    }
    if name.starts_with('_') {
        return Err("identifiers starting with `_` are reserved in C");
    }
    if KEYWORDS.contains(&name) {
        return Err("it is a C keyword or reserved name");
    }
    if name.starts_with("teil_") && name != "teil_kernel" {
        return Err("the prefix `teil_` is reserved for the generated helpers");
    }
    if LIBRARY.contains(&name) {
        return Err("it is a C standard library function");
    }
    Ok(())
}

/// Names the generated file and the driver declare at file scope through their headers
/// (stdlib.h, math.h, stdio.h, stdint.h).
const LIBRARY: &[&str] = &[
    "abort", "abs", "atexit", "atof", "atoi", "atol", "atoll", "bsearch", "calloc", "div", "exit",
    "free", "getenv", "labs", "llabs", "ldiv", "lldiv", "malloc", "mblen", "mbstowcs", "mbtowc",
    "qsort", "rand", "realloc", "srand", "strtod", "strtof", "strtol", "strtold", "strtoll",
    "strtoul", "strtoull", "system", "wcstombs", "wctomb", "_Exit", "acos", "asin", "atan",
    "atan2", "ceil", "cos", "cosh", "exp", "fabs", "floor", "fmod", "frexp", "ldexp", "log",
    "log10", "modf", "pow", "sin", "sinh", "sqrt", "tan", "tanh", "fmax", "fmin", "fma", "round",
    "trunc", "nan", "memcpy", "memset", "printf", "fprintf", "fopen", "fclose", "fread", "fwrite",
    "puts",
];

/// Significant initial characters of an internal identifier that C99 guarantees (§5.2.4.1).
pub const MAX_SIGNIFICANT: usize = 63;

/// How much of a longer TeIL name its C name keeps (`v20_` plus this stays under 63).
pub const LONG_PREFIX: usize = 40;

/// Hands out distinct C names.
#[derive(Default)]
pub struct Names {
    taken: BTreeSet<String>,
}

impl Names {
    /// A C name for the TeIL variable `var`: verbatim when usable, else `v_var`, `v2_var`, ...;
    /// a name over [`MAX_SIGNIFICANT`] characters is shortened to its first [`LONG_PREFIX`].
    pub fn variable(&mut self, var: &str) -> String {
        let short = var.len() <= MAX_SIGNIFICANT;
        if short && !is_unusable(var) && self.taken.insert(var.to_string()) {
            return var.to_string();
        }
        // TeIL identifiers are ASCII, so a byte prefix is a character prefix; `get` keeps a
        // caller passing something else from panicking (the name is then mangled whole).
        let var = if short {
            var
        } else {
            var.get(..LONG_PREFIX).unwrap_or(var)
        };
        let mut k = 1;
        loop {
            let cand = if k == 1 {
                format!("v_{var}")
            } else {
                format!("v{k}_{var}")
            };
            if !is_unusable(&cand) && self.taken.insert(cand.clone()) {
                return cand;
            }
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_and_reserved_names_are_mangled() {
        let mut n = Names::default();
        assert_eq!(n.variable("A"), "A");
        assert_eq!(n.variable("int"), "v_int");
        assert_eq!(n.variable("v_int"), "v_v_int");
        assert_eq!(n.variable("__x"), "v___x");
        assert_eq!(n.variable("_Bool"), "v__Bool");
        assert_eq!(n.variable("main"), "v_main");
        assert_eq!(n.variable("i0"), "v_i0");
        assert_eq!(n.variable("teil_ws"), "v_teil_ws");
        assert_eq!(n.variable("linux"), "v_linux");
        assert_eq!(n.variable("restrict"), "v_restrict");
    }

    #[test]
    fn long_names_are_shortened_and_distinct_within_63_characters() {
        let mut n = Names::default();
        let exact = "a".repeat(MAX_SIGNIFICANT);
        assert_eq!(n.variable(&exact), exact);
        let long = "b".repeat(1_000_000);
        let prefix = "b".repeat(LONG_PREFIX);
        assert_eq!(n.variable(&long), format!("v_{prefix}"));
        let other = format!("{}c", "b".repeat(70));
        assert_eq!(n.variable(&other), format!("v2_{prefix}"));
        assert_eq!(
            n.variable(&format!("{exact}a")),
            format!("v_{}", "a".repeat(LONG_PREFIX))
        );
        let mut seen = std::collections::BTreeSet::new();
        for k in 0..30 {
            let c = n.variable(&format!("{}{k}", "b".repeat(100)));
            assert!(c.len() <= MAX_SIGNIFICANT, "{c}");
            assert!(seen.insert(c));
        }
    }

    #[test]
    fn function_names_are_checked() {
        assert!(check_function_name("teil_kernel").is_ok());
        assert!(check_function_name("my_kernel").is_ok());
        assert!(check_function_name("int").is_err());
        assert!(check_function_name("_k").is_err());
        assert!(check_function_name("free").is_err());
        assert!(check_function_name("teil_max").is_err());
        assert!(check_function_name("3k").is_err());
        assert!(check_function_name("").is_err());
    }
}
