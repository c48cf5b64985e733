//! The kernel targets a campaign compiles for (spec/fuzzing.md, *Kernel targets*).
//!
//! The printed C holds a contraction kernel for each of `teil_cbackend::ir::Target`'s vector
//! widths, and the compiler's target flags choose one of them (`teil_vector_bits`). Compiled
//! with the flags of the campaign alone, a campaign would only ever judge the kernels of the
//! compiler's default target: on x86-64, the 4-double (AVX) kernels on SSE2, never the
//! AVX-512 or 2-double ones, nor plain C. A campaign therefore rotates through the
//! [`Isa`]s the host runs: consecutive programs, [`BLOCK`] at a time, are compiled with one
//! [`Isa`]'s flags added to the campaign's. Those flags choose instructions, never values
//! (`teil_cbackend::run`'s flag policy), so every [`Isa`] must give the oracle's results.

use std::fmt;

/// Programs compiled with one [`Isa`] before the next one's turn: a default chunk's worth, so
/// that a chunk of a default campaign is one translation unit.
pub const BLOCK: u64 = crate::campaign::DEFAULT_CHUNK as u64;

/// One way to compile a campaign's kernels: flags added to the campaign's, and the kernels of
/// the printed C that they choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// No flags: the compiler's default target (on x86-64, the 4-double kernels on SSE2).
    Default,
    /// `-mavx2 -mfma`: the 4-double kernels on AVX2 with fused multiply-adds (x86-64).
    Avx2,
    /// `-mavx512f -mfma`: the 8-double kernels on AVX-512 (x86-64).
    Avx512,
    /// `-Dteil_vector_bits=128`: the 2-double kernels (NEON's) on the default target's
    /// instructions.
    Vec128,
    /// `-Dteil_vector_bits=256`: the 4-double kernels on the default target's instructions.
    Vec256,
    /// `-Dteil_vector_bits=512`: the 8-double kernels on the default target's instructions.
    Vec512,
    /// `-Dteil_portable`: the plain C99 kernels, no vector extensions.
    Portable,
}

impl Isa {
    pub const ALL: [Isa; 7] = [
        Isa::Default,
        Isa::Avx2,
        Isa::Avx512,
        Isa::Vec128,
        Isa::Vec256,
        Isa::Vec512,
        Isa::Portable,
    ];

    /// The name on the command line (`--isa`) and in reproducers.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Default => "default",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Vec128 => "vec128",
            Isa::Vec256 => "vec256",
            Isa::Vec512 => "vec512",
            Isa::Portable => "portable",
        }
    }

    /// The flags added to the campaign's.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            Isa::Default => &[],
            Isa::Avx2 => &["-mavx2", "-mfma"],
            Isa::Avx512 => &["-mavx512f", "-mfma"],
            Isa::Vec128 => &["-Dteil_vector_bits=128"],
            Isa::Vec256 => &["-Dteil_vector_bits=256"],
            Isa::Vec512 => &["-Dteil_vector_bits=512"],
            Isa::Portable => &["-Dteil_portable"],
        }
    }

    /// Whether this machine runs what the flags compile for (the `-D` ones use the default
    /// target's instructions, so it runs them wherever it runs anything).
    pub fn runs_here(self) -> bool {
        match self {
            Isa::Avx2 => has_avx2_fma(),
            Isa::Avx512 => has_avx512f_fma(),
            _ => true,
        }
    }

    /// The [`Isa`]s a campaign on this machine rotates through, given the campaign's own
    /// flags: every kernel family of the printed C once, on the host's own vector
    /// instructions where it has them (AVX2, AVX-512 on x86-64), else on the default target's.
    /// Flags that already choose a target (`-m...`, `-march=`, `-mcpu=`, `-D teil_...`) leave
    /// only [`Isa::Default`]: the campaign compiles for what they say.
    pub fn host(cflags: &[String]) -> Vec<Isa> {
        if cflags.iter().any(|f| chooses_target(f)) {
            return vec![Isa::Default];
        }
        // The width the compiler's default target picks, which `Default` judges already.
        let default_bits = if cfg!(target_arch = "aarch64") {
            128
        } else {
            256
        };
        let mut isas = vec![Isa::Default];
        for (bits, native, generic) in [
            (128, None, Isa::Vec128),
            (256, Some(Isa::Avx2), Isa::Vec256),
            (512, Some(Isa::Avx512), Isa::Vec512),
        ] {
            match native.filter(|n| n.runs_here()) {
                Some(n) => isas.push(n),
                None if bits != default_bits => isas.push(generic),
                None => {}
            }
        }
        isas.push(Isa::Portable);
        isas
    }

    /// The [`Isa`] of the program at `index`: `isas` in turn, [`BLOCK`] programs each.
    pub fn of(isas: &[Isa], index: u64) -> Isa {
        let turn = (index / BLOCK) % isas.len().max(1) as u64;
        usize::try_from(turn)
            .ok()
            .and_then(|t| isas.get(t))
            .copied()
            .unwrap_or(Isa::Default)
    }

    /// Reads `--isa`: `host` ([`Isa::host`]) or names, comma-separated, each once, each one
    /// this machine runs. `Ok(None)` for `host`.
    pub fn parse_list(text: &str) -> Result<Option<Vec<Isa>>, String> {
        if text.trim() == "host" {
            return Ok(None);
        }
        let mut isas = Vec::new();
        for word in text.split(',').map(str::trim) {
            let isa = Isa::ALL
                .into_iter()
                .find(|i| i.name() == word)
                .ok_or_else(|| {
                    let names: Vec<&str> = Isa::ALL.iter().map(|i| i.name()).collect();
                    format!(
                        "`--isa {text}`: `{word}` is not a kernel target; they are host, {}",
                        names.join(", ")
                    )
                })?;
            if isas.contains(&isa) {
                return Err(format!("`--isa {text}`: `{word}` is named twice"));
            }
            if !isa.runs_here() {
                return Err(format!(
                    "`--isa {text}`: this machine does not run `{word}` ({})",
                    isa.flags().join(" ")
                ));
            }
            isas.push(isa);
        }
        Ok(Some(isas))
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a flag chooses the kernels' target itself: a `teil_` macro, a target CPU, or an
/// x86 vector extension.
fn chooses_target(flag: &str) -> bool {
    let macro_name = flag.strip_prefix("-D").or_else(|| flag.strip_prefix("-U"));
    let extension = flag
        .strip_prefix("-mno-")
        .or_else(|| flag.strip_prefix("-m"))
        .unwrap_or("");
    macro_name.is_some_and(|m| m.starts_with("teil_"))
        || [
            "-march=",
            "-mcpu=",
            "-mprefer-vector-width=",
            "-msve-vector-bits=",
        ]
        .iter()
        .any(|p| flag.starts_with(p))
        || ["sse", "avx", "fma"]
            .iter()
            .any(|e| extension.starts_with(e))
}

#[cfg(target_arch = "x86_64")]
fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

#[cfg(target_arch = "x86_64")]
fn has_avx512f_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("fma")
}

#[cfg(not(target_arch = "x86_64"))]
fn has_avx2_fma() -> bool {
    false
}

#[cfg(not(target_arch = "x86_64"))]
fn has_avx512f_fma() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_set_covers_every_kernel_width_once() {
        let isas = Isa::host(&[]);
        assert_eq!(isas.first(), Some(&Isa::Default));
        assert_eq!(isas.last(), Some(&Isa::Portable));
        assert!(isas.iter().all(|i| i.runs_here()));
        // Each width once: natively where the host runs it, else generically, unless the
        // default target already picks it.
        let has = |a: Isa, b: Isa| isas.contains(&a) as u8 + isas.contains(&b) as u8;
        assert_eq!(has(Isa::Avx512, Isa::Vec512), 1, "{isas:?}");
        if cfg!(target_arch = "x86_64") {
            assert!(isas.contains(&Isa::Vec128), "{isas:?}");
            assert!(!isas.contains(&Isa::Vec256), "{isas:?}");
            assert_eq!(isas.contains(&Isa::Avx2), has_avx2_fma());
        }
    }

    #[test]
    fn flags_that_choose_a_target_leave_the_default_alone() {
        for flags in [
            vec!["-O0", "-march=native"],
            vec!["-mavx2"],
            vec!["-Dteil_portable"],
            vec!["-Uteil_vector_bits"],
            vec!["-mno-avx512f"],
        ] {
            let flags: Vec<String> = flags.into_iter().map(String::from).collect();
            assert_eq!(Isa::host(&flags), [Isa::Default], "{flags:?}");
        }
        let plain: Vec<String> = ["-std=c99", "-O2", "-mtune=generic", "-m64", "-DNDEBUG"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(Isa::host(&plain), Isa::host(&[]));
    }

    #[test]
    fn programs_take_turns_a_block_at_a_time() {
        let isas = [Isa::Default, Isa::Portable];
        assert_eq!(Isa::of(&isas, 0), Isa::Default);
        assert_eq!(Isa::of(&isas, BLOCK - 1), Isa::Default);
        assert_eq!(Isa::of(&isas, BLOCK), Isa::Portable);
        assert_eq!(Isa::of(&isas, 2 * BLOCK + 3), Isa::Default);
        assert_eq!(Isa::of(&isas, u64::MAX), Isa::of(&isas, u64::MAX));
        assert_eq!(Isa::of(&[], 7), Isa::Default);
    }

    #[test]
    fn the_list_is_read_and_checked() {
        assert_eq!(Isa::parse_list("host"), Ok(None));
        assert_eq!(
            Isa::parse_list("portable, vec128"),
            Ok(Some(vec![Isa::Portable, Isa::Vec128]))
        );
        assert_eq!(
            Isa::parse_list("sse9").unwrap_err(),
            "`--isa sse9`: `sse9` is not a kernel target; they are host, default, avx2, \
             avx512, vec128, vec256, vec512, portable"
        );
        assert_eq!(
            Isa::parse_list("default,default").unwrap_err(),
            "`--isa default,default`: `default` is named twice"
        );
        if !has_avx512f_fma() {
            assert!(Isa::parse_list("avx512")
                .unwrap_err()
                .contains("this machine does not run `avx512`"));
        }
    }
}
