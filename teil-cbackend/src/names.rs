//! C identifiers for TeIL variables and backend-internal names.
//!
//! TeIL identifiers are `[A-Za-z_][A-Za-z0-9_]*`, but some of them are not usable as C names:
//! keywords of any C standard (`int`, `restrict`, `_Bool`, `bool`), reserved identifiers
//! (anything starting with `_`), `main`, macros GCC predefines in its GNU modes (`linux`,
//! `unix`), and the names the generated code uses itself (`i0`, `acc0`, `tmp0`, `teil_*`).
//! Those are mangled to `v_NAME` (with a numeric suffix if that is taken too). Everything else is
//! kept verbatim so the output stays readable.
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

/// Hands out distinct C names.
#[derive(Default)]
pub struct Names {
    taken: BTreeSet<String>,
}

impl Names {
    /// A C name for the TeIL variable `var`: verbatim when usable, else `v_var`, `v2_var`, ...
    pub fn variable(&mut self, var: &str) -> String {
        if !is_unusable(var) && self.taken.insert(var.to_string()) {
            return var.to_string();
        }
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
