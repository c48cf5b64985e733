//! The machine kernels are emitted for, and the sizes the kernel-form passes derive from it
//! (issue 43; PERFORMANCE.md, *Sizes from the machine*).
//!
//! A [`Machine`] is what the passes may know about the CPU that will run a kernel: the widest
//! vectors it has, whether it fuses multiply-adds, its data caches (level 1 and 2 per core,
//! level 3 as the operating system reports it), and what `teil tune` measured on it. Three
//! sources, one type:
//!
//! - [`Machine::reference`], the documented default and what [`crate::Options::default`]
//!   uses: the AMD Zen 5 on which the kernels' sizes were first measured (AVX-512, 48 KiB L1d,
//!   1 MiB L2, 32 MiB L3). Every kernel printed with it is what the backend printed before
//!   sizes followed the machine, so the snapshots and the spec's examples do not depend on the
//!   machine that runs the tests.
//! - [`Machine::host`], the CPU this process runs on: caches from
//!   `/sys/devices/system/cpu/cpu0/cache`, vector width and FMA from `cpuid` (x86-64) or the
//!   architecture, family, model and name from `/proc/cpuinfo`; the reference's value for
//!   anything it cannot read ([`Machine::unknown`] lists which).
//! - A description file ([`Machine::parse`], [`Machine::to_text`]): `key = value` lines, for
//!   emitting kernels for another machine (`teil emit-c --target-cpu FILE`) and for the profile
//!   `teil tune` writes.
//!
//! [`Machine::sizes`] turns a machine into [`Sizes`], the only thing the passes read. Sizes
//! decide which kernel form and which blocking a step gets, never what a cell computes: every
//! form computes every cell with the same operations in the same order (spec/padding.md), so a
//! kernel's results do not depend on the machine it was emitted for.

use std::fmt::{self, Write as _};

/// What the kernel-form passes may know about the CPU that will run a kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Machine {
    /// The CPU's name, for people (`model name` of `/proc/cpuinfo`); not used by any pass.
    pub name: String,
    /// x86 family and model numbers (0 where there are none); for the per-CPU record.
    pub family: u32,
    pub model: u32,
    /// Bits of the widest vectors of doubles the kernels can use: 512 (AVX-512F), 256 (AVX),
    /// 128 (SSE2, NEON), 0 (none).
    pub vector_bits: u32,
    /// Whether the CPU has fused multiply-add instructions.
    pub fma: bool,
    /// Level-1 data cache per core, in bytes.
    pub l1d: u64,
    /// Level-2 cache per core, in bytes.
    pub l2: u64,
    /// Level-3 cache as reported (often shared by many cores), in bytes.
    pub l3: u64,
    /// Whether one core streams from the L3 about as fast as the dot kernel's tile consumes
    /// (AMD's Zen L3, a victim cache per core complex: yes; the mesh L3 of Intel's Xeons:
    /// no). Decides [`Sizes::small_span`]'s formula. The host says yes for AMD family 23
    /// (Zen) and later.
    pub fast_l3: bool,
    /// The small-product limit `teil tune` measured on this machine, in place of the formula
    /// of [`Sizes::small_product`].
    pub small_product: Option<u64>,
    /// The small products' span limit `teil tune` measured on this machine, in doubles, in
    /// place of [`Sizes::small_span`]'s default.
    pub small_span: Option<u64>,
    /// The small-product limit of binary32 products `teil tune` measured on this machine, in
    /// place of [`Sizes::small_product_f32`]'s default (the binary64 limit).
    pub small_product_f32: Option<u64>,
}

/// The sizes the kernel-form passes read, derived from a [`Machine`] ([`Machine::sizes`]).
/// Part of [`crate::Options`] and recorded in the kernel ([`crate::ir::Kernel::sizes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Sizes {
    /// A matrix product whose rows and columns both number at most this many is computed by
    /// the dot kernel's register tile instead of the packed kernel (`opt::contract`, *Small
    /// products*): the largest multiple of 32 up to 320 whose square of doubles fills at most
    /// 4/5 of L2, so that the operand the tile walks row block after row block (`K x N` doubles,
    /// `K` about `N`) stays in L2 with room for the rows and the target. 320 on 1 MiB, where it
    /// was measured on `n³` products from 32 to 512 (PERFORMANCE.md, *Small products*: the dot
    /// kernel faster up to 321, by 12-16 % there, even at 384, slower from 512); on a Zen 3
    /// (512 KiB) the rule of 320 made `257 x 263 x 269` 2.6x slower than the packed kernel
    /// (issue 43), which the formula's 224 leaves packed.
    pub small_product: u64,
    /// Doubles in a quarter of L2 (32,768 on 1 MiB), at most 32,768: the largest column panel
    /// walked row sliver by row sliver (`Panels::panel_in_l2`), and the largest span of a
    /// dot-product block's terms whose operands read no rows. A quarter leaves L2 room for the
    /// row panel streaming past and the target's cells. Not more than on the reference: on the
    /// Xeon of Emerald Rapids (2 MiB of L2) a quarter, 65,536, gave `random_25` of `bench/run
    /// --random 50 --seed 1` dot products over 512 KB of terms, 1.28-1.34x slower than ede8e87
    /// where 32,768 (a plain nest) is 1.15x (PERFORMANCE.md, *Sizes from the machine*).
    pub l2_block: u64,
    /// Largest span (stride in `k` times `K`, in doubles) of the terms of an operand that
    /// reads the lane for a small product to take the dot kernel's tile. The tile streams that
    /// operand once per block of rows, so it must come from a cache one core reads fast: with
    /// a fast L3 ([`Machine::fast_l3`]) 7/16 of it, 7 x 2^18 doubles (14 MiB) on the
    /// reference's 32 MiB, where it was measured (`64 x K x 256`: the tile 1.48x faster at `K`
    /// = 4096, even or 1.19x faster at 7168, 1.36x slower at 8192; PERFORMANCE.md, *Small
    /// products*); otherwise half of L2 (on the Xeon of Emerald Rapids, 2 MiB of L2, the tile
    /// was 1.1-1.4x slower from `K` = 1024, 2 MiB of terms; PERFORMANCE.md, *Sizes from the
    /// machine*).
    pub small_span: u64,
    /// [`Sizes::small_product`] for binary32 products. The tile's vectors hold twice the
    /// columns, so the tile can win further: on the Zen 3 of PERFORMANCE.md the binary64 limit
    /// is 96 and binary32 products gained from the tile up to 128, in three `teil tune` runs
    /// out of three (*Binary32 small products*). Measured per CPU by `teil tune`; without a
    /// measurement, the binary64 limit (no CPU gets a binary32 limit nobody measured).
    pub small_product_f32: u64,
}

impl Sizes {
    /// The small-product limit for products of element type `elem`.
    pub fn small_product_in(&self, elem: teil::ast::ElemType) -> u64 {
        match elem {
            teil::ast::ElemType::F64 => self.small_product,
            teil::ast::ElemType::F32 => self.small_product_f32,
        }
    }
}

impl Default for Sizes {
    /// The reference machine's sizes ([`Machine::reference`]).
    fn default() -> Self {
        Machine::reference().sizes()
    }
}

/// The environment variable naming the machine kernels are emitted for when no
/// `--target-cpu` does ([`Machine::target`]): `host`, `reference` or a description file.
pub const TARGET_CPU_VAR: &str = "TEIL_TARGET_CPU";

/// Where `teil tune` writes its profile by default and [`Machine::host`] looks for one:
/// `$XDG_CONFIG_HOME/teil/machine.txt`, else `~/.config/teil/machine.txt`; `None` without
/// either variable.
pub fn profile_path() -> Option<std::path::PathBuf> {
    Some(
        base_dir("XDG_CONFIG_HOME", ".config")?
            .join("teil")
            .join("machine.txt"),
    )
}

/// An XDG base directory: `$xdg` where it is an absolute path (the XDG base directory
/// specification ignores relative ones), else `$HOME/home_dir`; `None` without either. The one
/// place `teil` resolves them: the profile, the hint's memory and the kernel cache
/// ([`crate::shared::default_cache_dir`]).
pub(crate) fn base_dir(xdg: &str, home_dir: &str) -> Option<std::path::PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    var(xdg)
        .map(std::path::PathBuf::from)
        .filter(|d| d.is_absolute())
        .or_else(|| var("HOME").map(|h| std::path::PathBuf::from(h).join(home_dir)))
}

/// A CPU model on which the project measured `teil tune`'s choices, shipped in the binary:
/// [`Machine::host`] takes its sizes on a CPU of that vendor, family and model when the user
/// has no profile of their own ([`profile_path`]), so that no manual step gives the tuned
/// kernels there (issue 53). PERFORMANCE.md's record per CPU has the measurements.
#[derive(Debug, PartialEq, Eq)]
pub struct Shipped {
    /// The `cpuid` vendor (`vendor_id` of `/proc/cpuinfo`): `AuthenticAMD`, `GenuineIntel`.
    pub vendor: &'static str,
    pub family: u32,
    /// `None`: every model of the family (where the measured CPU's model was not recorded).
    pub model: Option<u32>,
    /// For people: which CPU, and where it was measured.
    pub name: &'static str,
    pub small_product: u64,
    /// In doubles, as [`Machine::small_span`].
    pub small_span: u64,
    /// Where binary32 products were measured ([`Machine::small_product_f32`]).
    pub small_product_f32: Option<u64>,
}

/// The shipped profiles, a model's own before a whole family's. Entries come from `teil tune`
/// on each CPU (PERFORMANCE.md, *The record per CPU*); the Xeon of family 6 model 167 has no
/// measured choices on record, so it has none.
pub const SHIPPED: [Shipped; 4] = [
    Shipped {
        vendor: "AuthenticAMD",
        family: 25,
        model: Some(1),
        name: "AMD Zen 3 (EPYC, family 25 model 1), measured 2026-12-07",
        small_product: 96,
        small_span: 16384,
        small_product_f32: Some(128),
    },
    Shipped {
        vendor: "AuthenticAMD",
        family: 25,
        model: Some(17),
        name: "AMD Zen 4 (EPYC, family 25 model 17), measured 2026-12-05",
        small_product: 192,
        small_span: 1 << 20,
        small_product_f32: None,
    },
    Shipped {
        vendor: "GenuineIntel",
        family: 6,
        model: Some(207),
        name: "Intel Xeon, Emerald Rapids (family 6 model 207), measured 2026-11-28",
        small_product: 320,
        small_span: 1 << 17,
        small_product_f32: None,
    },
    Shipped {
        vendor: "AuthenticAMD",
        family: 26,
        model: None,
        name: "AMD Zen 5 (family 26), the reference machine, measured 2026-11-27",
        small_product: 320,
        small_span: 7 << 18,
        small_product_f32: None,
    },
];

/// The shipped profile of a CPU, if the project measured one of its vendor, family and model.
pub fn shipped(vendor: &str, family: u32, model: u32) -> Option<&'static Shipped> {
    let of = |s: &&Shipped| s.vendor == vendor && s.family == family;
    let own = SHIPPED.iter().filter(of).find(|s| s.model == Some(model));
    own.or_else(|| SHIPPED.iter().filter(of).find(|s| s.model.is_none()))
}

/// Where [`Machine::host`]'s measured sizes came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The user's own profile, which `teil tune` wrote ([`profile_path`]).
    Profile,
    /// The project's measurement of this CPU model ([`SHIPPED`]).
    Shipped(&'static Shipped),
    /// No measurement: the formulas of [`Sizes`].
    Formula,
}

impl Source {
    /// Where each size came from, for `teil tune --describe`.
    pub fn describe(self) -> String {
        match self {
            Source::Profile => match profile_path() {
                Some(p) => format!("your profile {}, written by `teil tune`", p.display()),
                None => "your profile, written by `teil tune`".to_string(),
            },
            Source::Shipped(s) => format!("the profile shipped with teil for {}", s.name),
            Source::Formula => "the formula (no measurement for this CPU)".to_string(),
        }
    }
}

/// Where the hint for CPUs without measured sizes is remembered as shown:
/// `$XDG_CACHE_HOME/teil/cpus`, else `~/.cache/teil/cpus`.
fn hint_dir() -> Option<std::path::PathBuf> {
    Some(
        base_dir("XDG_CACHE_HOME", ".cache")?
            .join("teil")
            .join("cpus"),
    )
}

/// The one line telling the user that `teil tune` measures this machine, the first time a
/// kernel is compiled for `host` on a CPU with neither a shipped profile nor one of the user's
/// own ([`Source::Formula`]); `None` on every later call, in any process, for the same CPU
/// (vendor, family, model), which is remembered by an empty file under `hint_dir`, created
/// at most once. Where that file cannot be created (no home, a read-only cache) the hint is not
/// shown at all rather than on every run.
pub fn unknown_host_hint() -> Option<String> {
    let (m, _, vendor, source) = host::described();
    hint_for(m, vendor, *source, &hint_dir()?)
}

/// [`unknown_host_hint`] where a kernel is compiled for `host`: `choice` names the machine as
/// [`Machine::target`] takes it (`--target-cpu`, else [`TARGET_CPU_VAR`], else `host`).
pub fn hint_for_target(choice: Option<&str>) -> Option<String> {
    (target_name(choice) == "host")
        .then(unknown_host_hint)
        .flatten()
}

/// The machine a user names: `choice` (`--target-cpu`), else [`TARGET_CPU_VAR`], else `host`.
fn target_name(choice: Option<&str>) -> String {
    let from_env = std::env::var(TARGET_CPU_VAR).ok();
    choice.or(from_env.as_deref()).unwrap_or("host").to_string()
}

/// [`unknown_host_hint`] for the machine `m` of `vendor` whose sizes came from `source`,
/// remembered in `dir`.
pub fn hint_for(
    m: &Machine,
    vendor: &str,
    source: Source,
    dir: &std::path::Path,
) -> Option<String> {
    if source != Source::Formula {
        return None;
    }
    let key: String = format!("{vendor}-{}-{}", m.family, m.model)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    std::fs::create_dir_all(dir).ok()?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(key))
        .ok()?;
    Some(format!(
        "note: teil has no measured kernel sizes for this CPU ({}, family {} model {}) and uses \
         its formulas; `teil tune` measures them in under 20 s (shown once per CPU)",
        m.name, m.family, m.model
    ))
}

/// Bounds on a description's values: a value outside them is refused, not clamped.
const CACHE_RANGE: (u64, u64) = (1 << 10, 1 << 40);
const SMALL_PRODUCT_RANGE: (u64, u64) = (16, 4096);
const SMALL_SPAN_RANGE: (u64, u64) = (1 << 10, 1 << 40);
/// The longest description file read (a description is a dozen short lines).
pub const MAX_DESCRIPTION: usize = 64 * 1024;

impl Machine {
    /// The documented default: the AMD Zen 5 (family 26) on which the sizes were first
    /// measured.
    pub fn reference() -> Machine {
        Machine {
            name: "reference (AMD Zen 5)".to_string(),
            family: 26,
            model: 0,
            vector_bits: 512,
            fma: true,
            l1d: 48 << 10,
            l2: 1 << 20,
            l3: 32 << 20,
            fast_l3: true,
            small_product: None,
            small_span: None,
            small_product_f32: None,
        }
    }

    /// This machine without the sizes `teil tune` measured: what it measures from, and what a
    /// profile of this same CPU is compared with.
    pub fn unmeasured(&self) -> Machine {
        Machine {
            small_product: None,
            small_span: None,
            small_product_f32: None,
            ..self.clone()
        }
    }

    /// The sizes for this machine: the formulas of [`Sizes`]' fields, or what `teil tune`
    /// measured.
    pub fn sizes(&self) -> Sizes {
        let doubles = self.l2 / 8;
        let formula = ((doubles * 4 / 5).isqrt() / 32 * 32).clamp(SMALL_PRODUCT_RANGE.0, 320);
        let span = if self.fast_l3 {
            self.l3 / 8 * 7 / 16
        } else {
            doubles / 2
        };
        let small_product = self.small_product.unwrap_or(formula);
        Sizes {
            small_product,
            l2_block: (doubles / 4).clamp(512, 1 << 15),
            small_span: self.small_span.unwrap_or(span.max(SMALL_SPAN_RANGE.0)),
            small_product_f32: self.small_product_f32.unwrap_or(small_product),
        }
    }

    /// The CPU this process runs on; see the module documentation for where each value comes
    /// from. Where `teil tune` left a profile ([`profile_path`]) that describes this same CPU
    /// (name, family, model, vector width, FMA and caches all equal), its measured
    /// `small_product` is taken too; a profile of another CPU, or one that does not parse, is
    /// ignored. Read once per process.
    pub fn host() -> &'static Machine {
        &host::described().0
    }

    /// The fields [`Machine::host`] could not read and took from the reference instead.
    pub fn unknown() -> &'static [&'static str] {
        &host::described().1
    }

    /// Where [`Machine::host`]'s measured sizes came from: the user's profile, a shipped one
    /// ([`SHIPPED`]), or none (the formulas).
    pub fn host_source() -> Source {
        host::described().3
    }

    /// This machine with a shipped profile's measured sizes, where [`SHIPPED`] has one for
    /// `vendor` and this family and model; unchanged otherwise.
    pub fn with_shipped(&self, vendor: &str) -> (Machine, Option<&'static Shipped>) {
        match shipped(vendor, self.family, self.model) {
            Some(s) => (
                Machine {
                    small_product: Some(s.small_product),
                    small_span: Some(s.small_span),
                    small_product_f32: s.small_product_f32,
                    ..self.clone()
                },
                Some(s),
            ),
            None => (self.clone(), None),
        }
    }

    /// The machine a kernel is emitted for, as a user names it (`--target-cpu`, or the
    /// environment variable [`TARGET_CPU_VAR`] when `choice` is `None`): `host` (the default
    /// when neither names one), `reference`, or the path of a description file (what `teil
    /// tune` writes). The file is read through [`Machine::parse`], at most
    /// [`MAX_DESCRIPTION`] bytes.
    pub fn target(choice: Option<&str>) -> Result<Machine, DescriptionError> {
        let name = target_name(choice);
        let choice = name.as_str();
        let whole = |message: String| DescriptionError {
            file: None,
            line: 0,
            message,
        };
        match choice {
            "host" => Ok(Machine::host().clone()),
            "reference" => Ok(Machine::reference()),
            path => {
                let text = read_bounded(path, MAX_DESCRIPTION as u64 + 1).map_err(|e| {
                    whole(format!(
                        "cannot read the machine description `{path}` (expected `host`, \
                             `reference` or a file): {e}"
                    ))
                })?;
                Machine::parse(&text).map_err(|e| DescriptionError {
                    file: Some(path.to_string()),
                    ..e
                })
            }
        }
    }

    /// Reads a description: `key = value` lines (keys as [`Machine::to_text`] writes them),
    /// blank lines and `#` comments. Keys not given take the reference machine's values;
    /// sizes are bytes, optionally with `K`, `KiB`, `M`, `MiB`, `G` or `GiB`. An unknown or
    /// repeated key, a value out of range, or a description longer than [`MAX_DESCRIPTION`]
    /// is an error naming its line.
    pub fn parse(text: &str) -> Result<Machine, DescriptionError> {
        if text.len() > MAX_DESCRIPTION {
            return Err(DescriptionError {
                file: None,
                line: 0,
                message: format!("longer than {MAX_DESCRIPTION} bytes"),
            });
        }
        let mut m = Machine::reference();
        let mut seen: Vec<&str> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |message: String| DescriptionError {
                file: None,
                line,
                message,
            };
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            let Some((key, value)) = content.split_once('=') else {
                return Err(err(format!("expected `key = value`, found `{content}`")));
            };
            let (key, value) = (key.trim(), value.trim());
            if seen.contains(&key) {
                return Err(err(format!("`{key}` is given twice")));
            }
            let number = |v: &str| {
                v.parse::<u32>()
                    .map_err(|_| err(format!("`{key}` must be a number, found `{v}`")))
            };
            match key {
                "name" => m.name = value.to_string(),
                "family" => m.family = number(value)?,
                "model" => m.model = number(value)?,
                "vector_bits" => {
                    m.vector_bits = number(value)?;
                    if ![0, 128, 256, 512].contains(&m.vector_bits) {
                        return Err(err(format!(
                            "`vector_bits` must be 0, 128, 256 or 512, found {}",
                            m.vector_bits
                        )));
                    }
                }
                "fma" | "fast_l3" => {
                    let yes = match value {
                        "yes" | "true" => true,
                        "no" | "false" => false,
                        _ => {
                            return Err(err(format!("`{key}` must be yes or no, found `{value}`")))
                        }
                    };
                    *if key == "fma" {
                        &mut m.fma
                    } else {
                        &mut m.fast_l3
                    } = yes;
                }
                "l1d" | "l2" | "l3" => {
                    let bytes = parse_bytes(value)
                        .filter(|b| (CACHE_RANGE.0..=CACHE_RANGE.1).contains(b))
                        .ok_or_else(|| {
                            err(format!(
                                "`{key}` must be a size from 1 KiB to 1 TiB (bytes, or with K, \
                                 KiB, M, MiB, G or GiB), found `{value}`"
                            ))
                        })?;
                    *match key {
                        "l1d" => &mut m.l1d,
                        "l2" => &mut m.l2,
                        _ => &mut m.l3,
                    } = bytes;
                }
                "small_product" | "small_product_f32" => {
                    let n = u64::from(number(value)?);
                    if !(SMALL_PRODUCT_RANGE.0..=SMALL_PRODUCT_RANGE.1).contains(&n) {
                        return Err(err(format!(
                            "`{key}` must be from {} to {}, found {n}",
                            SMALL_PRODUCT_RANGE.0, SMALL_PRODUCT_RANGE.1
                        )));
                    }
                    *if key == "small_product" {
                        &mut m.small_product
                    } else {
                        &mut m.small_product_f32
                    } = Some(n);
                }
                "small_span" => {
                    let n = parse_count(value)
                        .filter(|n| (SMALL_SPAN_RANGE.0..=SMALL_SPAN_RANGE.1).contains(n));
                    m.small_span = Some(n.ok_or_else(|| {
                        err(format!(
                            "`small_span` must be a number of doubles from {} to {}, found `{value}`",
                            SMALL_SPAN_RANGE.0, SMALL_SPAN_RANGE.1
                        ))
                    })?);
                }
                _ => {
                    return Err(err(format!(
                        "unknown key `{key}` (known: name, family, model, vector_bits, fma, l1d, \
                         l2, l3, fast_l3, small_product, small_span, small_product_f32)"
                    )))
                }
            }
            seen.push(key);
        }
        Ok(m)
    }

    /// The description [`Machine::parse`] reads back, with the derived sizes as comments.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# teil machine description (spec/padding.md, *Sizes*)");
        let _ = writeln!(s, "name = {}", self.name.replace('#', " "));
        let _ = writeln!(s, "family = {}", self.family);
        let _ = writeln!(s, "model = {}", self.model);
        let _ = writeln!(s, "vector_bits = {}", self.vector_bits);
        let _ = writeln!(s, "fma = {}", if self.fma { "yes" } else { "no" });
        let _ = writeln!(s, "l1d = {}", Bytes(self.l1d));
        let _ = writeln!(s, "l2 = {}", Bytes(self.l2));
        let _ = writeln!(s, "l3 = {}", Bytes(self.l3));
        let _ = writeln!(s, "fast_l3 = {}", if self.fast_l3 { "yes" } else { "no" });
        if let Some(n) = self.small_product {
            let _ = writeln!(s, "small_product = {n}");
        }
        if let Some(n) = self.small_span {
            let _ = writeln!(s, "small_span = {n}");
        }
        if let Some(n) = self.small_product_f32 {
            let _ = writeln!(s, "small_product_f32 = {n}");
        }
        let sizes = self.sizes();
        let _ = writeln!(
            s,
            "# sizes: small_product {}, small_span {} doubles, l2_block {} doubles, \
             small_product_f32 {}",
            sizes.small_product, sizes.small_span, sizes.l2_block, sizes.small_product_f32
        );
        s
    }

    /// One line for people: name, family/model, ISA and caches.
    pub fn summary(&self) -> String {
        let isa = match self.vector_bits {
            512 => "AVX-512",
            256 => "AVX2",
            128 if cfg!(target_arch = "aarch64") => "NEON",
            128 => "SSE2",
            _ => "scalar",
        };
        format!(
            "{} (family {} model {}), {isa}{}, L1d {}, L2 {}, L3 {}",
            self.name,
            self.family,
            self.model,
            if self.fma { " + FMA" } else { "" },
            Bytes(self.l1d),
            Bytes(self.l2),
            Bytes(self.l3)
        )
    }
}

/// Why a machine description was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", place(file.as_deref(), *line))]
pub struct DescriptionError {
    /// The description file, where one was read.
    pub file: Option<String>,
    /// The 1-based line (0: the whole description).
    pub line: usize,
    pub message: String,
}

/// `` `FILE`, line N: `` for an error's message, as much of it as is known.
fn place(file: Option<&str>, line: usize) -> String {
    match (file, line) {
        (Some(f), 0) => format!("`{f}`: "),
        (Some(f), l) => format!("`{f}`, line {l}: "),
        (None, 0) => String::new(),
        (None, l) => format!("line {l}: "),
    }
}

/// A size in bytes written as `48K`, `2M`, `1G` where it is a whole number of those.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
            if b >= 1 << shift && b % (1 << shift) == 0 {
                return write!(f, "{}{unit}", b >> shift);
            }
        }
        write!(f, "{b}")
    }
}

/// A count of doubles: digits only.
fn parse_count(s: &str) -> Option<u64> {
    s.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| s.parse().ok())
        .flatten()
}

/// `48K`, `48KiB`, `2M`, `1G`, `49152`: bytes; `None` for anything else or an overflow.
fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let shift = match unit.trim() {
        "" => 0,
        "K" | "KiB" | "k" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

mod host {
    //! Reading the host's description (the module documentation says from where).
    use super::{parse_bytes, Machine, Source};

    /// The host, the fields taken from the reference, the `cpuid` vendor and where the
    /// measured sizes came from, read once per process.
    type Described = (Machine, Vec<&'static str>, String, Source);

    pub(super) fn described() -> &'static Described {
        static HOST: std::sync::OnceLock<Described> = std::sync::OnceLock::new();
        HOST.get_or_init(read)
    }

    fn read() -> Described {
        let mut m = Machine::reference();
        let mut unknown = Vec::new();
        m.name = "unknown CPU".to_string();
        m.family = 0;
        m.model = 0;
        let cpuinfo = read_small("/proc/cpuinfo").unwrap_or_default();
        let field = |key: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        match field("model name") {
            Some(n) => m.name = n.replace('#', " "),
            None => unknown.push("name"),
        }
        m.family = field("cpu family")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        m.model = field("model").and_then(|v| v.parse().ok()).unwrap_or(0);
        let vendor = field("vendor_id").unwrap_or_default();
        m.fast_l3 = vendor == "AuthenticAMD" && m.family >= 23;
        match isa() {
            Some((bits, fma)) => (m.vector_bits, m.fma) = (bits, fma),
            None => unknown.push("vector_bits"),
        }
        for (level, kind, slot, name) in [
            (1, "Data", &mut m.l1d, "l1d"),
            (2, "Unified", &mut m.l2, "l2"),
            (3, "Unified", &mut m.l3, "l3"),
        ] {
            match cache(level, kind) {
                Some(bytes) => *slot = bytes,
                None => unknown.push(name),
            }
        }
        // A user's profile that exists but cannot be read or parsed is ignored, said once per
        // process (this runs once): a FIFO or a damaged file must neither hang nor silently
        // change the sizes.
        let tuned = super::profile_path().and_then(|path| {
            let text = match super::read_bounded(&path, super::MAX_DESCRIPTION as u64 + 1) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                Err(e) => {
                    eprintln!(
                        "warning: ignoring the machine profile `{}`: {e}",
                        path.display()
                    );
                    return None;
                }
            };
            Machine::parse(&text)
                .map_err(|e| {
                    eprintln!(
                        "warning: ignoring the machine profile `{}`: {e}",
                        path.display()
                    )
                })
                .ok()
        });
        // The user's own measurement of this same CPU first, then the project's of its model.
        if let Some(t) = tuned {
            if t.unmeasured() == m {
                return (t, unknown, vendor, Source::Profile);
            }
        }
        let (m, shipped) = m.with_shipped(&vendor);
        let source = shipped.map_or(Source::Formula, Source::Shipped);
        (m, unknown, vendor, source)
    }

    /// The widest vectors of doubles and FMA, from `cpuid` through the standard library.
    fn isa() -> Option<(u32, bool)> {
        #[cfg(target_arch = "x86_64")]
        {
            let bits = if std::arch::is_x86_feature_detected!("avx512f") {
                512
            } else if std::arch::is_x86_feature_detected!("avx") {
                256
            } else {
                128
            };
            Some((bits, std::arch::is_x86_feature_detected!("fma")))
        }
        #[cfg(target_arch = "aarch64")]
        {
            Some((128, true))
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            None
        }
    }

    /// The size of cpu0's cache of this level and type, from sysfs.
    fn cache(level: u32, kind: &str) -> Option<u64> {
        let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
        // A handful of index directories; bounded in case sysfs is something else.
        for i in 0..16 {
            let dir = base.join(format!("index{i}"));
            let Some(l) = read_small(dir.join("level")) else {
                continue;
            };
            let t = read_small(dir.join("type")).unwrap_or_default();
            if l.trim().parse() == Ok(level) && (t.trim() == kind || t.trim() == "Unified") {
                return read_small(dir.join("size")).and_then(|s| parse_bytes(&s));
            }
        }
        None
    }

    /// A file's text, if it is readable and at most 1 MiB (sysfs and cpuinfo are far less).
    fn read_small(path: impl AsRef<std::path::Path>) -> Option<String> {
        super::read_bounded(path, 1 << 20).ok()
    }
}

/// A regular file's text, at most `limit` bytes of it (a longer file is cut there; a
/// description's own length check then refuses it). A FIFO, device, socket or directory is
/// refused at once, without waiting for a writer (`teil_io::files::open_regular`).
fn read_bounded(path: impl AsRef<std::path::Path>, limit: u64) -> std::io::Result<String> {
    use std::io::Read;
    #[cfg(unix)]
    let (f, _) = teil_io::files::open_regular(path.as_ref()).map_err(|e| match e {
        teil_io::files::ReadError::Io(e) => e,
        other => std::io::Error::other(other.to_string()),
    })?;
    // Elsewhere (the playground's WebAssembly build has no files to read) a plain open.
    #[cfg(not(unix))]
    let f = std::fs::File::open(path.as_ref())?;
    let mut text = String::new();
    f.take(limit).read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_machine_gives_the_sizes_measured_on_it() {
        let s = Machine::reference().sizes();
        assert_eq!((s.small_product, s.l2_block), (320, 1 << 15));
        assert_eq!(Sizes::default(), s);
    }

    #[test]
    fn sizes_follow_the_level_two_cache() {
        let with_l2 = |l2: u64| {
            Machine {
                l2,
                ..Machine::reference()
            }
            .sizes()
        };
        // A Zen 3 (512 KiB), a Xeon of Emerald Rapids (2 MiB), an old 256 KiB core.
        assert_eq!(
            (
                with_l2(512 << 10).small_product,
                with_l2(512 << 10).l2_block
            ),
            (224, 1 << 14)
        );
        // 448 and 2^16 by the L2 alone; at most 320 and 2^15.
        assert_eq!(
            (with_l2(2 << 20).small_product, with_l2(2 << 20).l2_block),
            (320, 1 << 15)
        );
        assert_eq!(with_l2(256 << 10).small_product, 160);
        // Tiny caches still give usable sizes.
        assert_eq!(
            (with_l2(1 << 10).small_product, with_l2(1 << 10).l2_block),
            (16, 512)
        );
    }

    #[test]
    fn the_span_limit_follows_the_cache_a_core_streams_from() {
        let reference = Machine::reference();
        assert_eq!(reference.sizes().small_span, 7 << 18);
        let mesh = Machine {
            l2: 2 << 20,
            l3: 260 << 20,
            fast_l3: false,
            ..Machine::reference()
        };
        assert_eq!(mesh.sizes().small_span, 1 << 17);
        let zen3 = Machine {
            l2: 512 << 10,
            ..Machine::reference()
        };
        assert_eq!(zen3.sizes().small_span, 7 << 18);
    }

    #[test]
    fn a_measured_small_product_limit_replaces_the_formula() {
        let m = Machine {
            small_product: Some(256),
            ..Machine::reference()
        };
        assert_eq!(m.sizes().small_product, 256);
        assert_eq!(m.sizes().l2_block, 1 << 15);
        // Binary32 products take the binary64 limit until their own is measured.
        assert_eq!(m.sizes().small_product_f32, 256);
        assert_eq!(Machine::reference().sizes().small_product_f32, 320);
        let both = Machine {
            small_product_f32: Some(384),
            ..m.clone()
        };
        let sizes = both.sizes();
        assert_eq!((sizes.small_product, sizes.small_product_f32), (256, 384));
        use teil::ast::ElemType;
        assert_eq!(
            (
                sizes.small_product_in(ElemType::F64),
                sizes.small_product_in(ElemType::F32)
            ),
            (256, 384)
        );
        assert_eq!(both.unmeasured(), Machine::reference());
    }

    #[test]
    fn descriptions_round_trip() {
        let m = Machine {
            name: "AMD EPYC 7B13".into(),
            family: 25,
            model: 1,
            vector_bits: 256,
            fma: true,
            l1d: 32 << 10,
            l2: 512 << 10,
            l3: 32 << 20,
            fast_l3: true,
            small_product: Some(192),
            small_span: Some(1 << 19),
            small_product_f32: Some(256),
        };
        let text = m.to_text();
        assert!(
            text.contains("l2 = 512K\nl3 = 32M\nfast_l3 = yes\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "# sizes: small_product 192, small_span 524288 doubles, l2_block 16384 doubles, \
                 small_product_f32 256"
            ),
            "{text}"
        );
        assert!(text.contains("small_product_f32 = 256\n"), "{text}");
        assert_eq!(Machine::parse(&text), Ok(m.clone()));
        // Without a measured binary32 limit the line is absent, and the binary64 one serves.
        let f64_only = Machine {
            small_product_f32: None,
            ..m
        };
        let text = f64_only.to_text();
        assert!(!text.contains("small_product_f32 ="), "{text}");
        assert!(text.ends_with("small_product_f32 192\n"), "{text}");
        assert_eq!(Machine::parse(&text), Ok(f64_only));
    }

    #[test]
    fn a_partial_description_takes_the_reference_values() {
        let m = Machine::parse("# a Zen 3\nl2 = 512KiB   # per core\n\nl1d=32768\n").unwrap();
        assert_eq!((m.l2, m.l1d, m.l3), (512 << 10, 32 << 10, 32 << 20));
        assert_eq!(m.sizes().small_product, 224);
    }

    #[test]
    fn bad_descriptions_name_their_line() {
        let cases = [
            ("l2 = 1M\nl2 = 2M", 2, "`l2` is given twice"),
            ("l2 = lots", 1, "`l2` must be a size"),
            ("l2 = 1", 1, "`l2` must be a size"),
            ("l2 = 99999999999999999999", 1, "`l2` must be a size"),
            ("\ncolour = blue", 2, "unknown key `colour`"),
            ("l2", 1, "expected `key = value`"),
            ("vector_bits = 384", 1, "must be 0, 128, 256 or 512"),
            ("fma = maybe", 1, "`fma` must be yes or no"),
            ("fast_l3 = 1", 1, "`fast_l3` must be yes or no"),
            (
                "small_product = 5",
                1,
                "`small_product` must be from 16 to 4096",
            ),
            (
                "small_product_f32 = 5000",
                1,
                "`small_product_f32` must be from 16 to 4096",
            ),
            (
                "small_product_f32 = 64\nsmall_product_f32 = 64",
                2,
                "`small_product_f32` is given twice",
            ),
            ("family = -1", 1, "`family` must be a number"),
        ];
        for (text, line, message) in cases {
            let e = Machine::parse(text).expect_err(text);
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.message.contains(message), "{text}: {e}");
        }
        let long = "# x\n".repeat(MAX_DESCRIPTION);
        assert_eq!(Machine::parse(&long).unwrap_err().line, 0);
    }

    /// Issue 53: a described CPU selects the profile shipped for its vendor, family and model
    /// (a model's own before its family's), and yields its measured sizes; other CPUs keep the
    /// formulas.
    #[test]
    fn a_described_cpu_selects_its_shipped_profile() {
        let amd = "AuthenticAMD";
        let zen4 = Machine {
            name: "AMD EPYC 9B14".into(),
            family: 25,
            model: 17,
            l2: 1 << 20,
            ..Machine::reference()
        };
        // The formula gives 320 on Zen 4's 1 MiB of L2; the measurement 192 and 2^20 doubles.
        assert_eq!(zen4.sizes().small_product, 320);
        let (tuned, s) = zen4.with_shipped(amd);
        assert_eq!(s.map(|s| s.name), Some(SHIPPED[1].name));
        let sizes = tuned.sizes();
        assert_eq!((sizes.small_product, sizes.small_span), (192, 1 << 20));
        assert_eq!(sizes.l2_block, zen4.sizes().l2_block);
        // Binary32 products were not measured on the Zen 4: the binary64 limit.
        assert_eq!(sizes.small_product_f32, 192);
        // A Zen 3 of model 1 (binary32 products measured too); the Emerald Rapids Xeon; any
        // Zen 5 (family 26) takes the reference's measured sizes.
        let zen3 = shipped(amd, 25, 1).expect("Zen 3");
        assert_eq!(
            (zen3.small_product, zen3.small_product_f32),
            (96, Some(128))
        );
        let (zen3_host, _) = Machine {
            family: 25,
            model: 1,
            l2: 512 << 10,
            ..Machine::reference()
        }
        .with_shipped(amd);
        assert_eq!(
            (
                zen3_host.sizes().small_product,
                zen3_host.sizes().small_product_f32
            ),
            (96, 128)
        );
        let emr = shipped("GenuineIntel", 6, 207).expect("Emerald Rapids");
        assert_eq!((emr.small_product, emr.small_span), (320, 1 << 17));
        for model in [0, 2, 68] {
            let zen5 = shipped(amd, 26, model).expect("Zen 5");
            let reference = Machine::reference().sizes();
            assert_eq!(
                (zen5.small_product, zen5.small_span),
                (reference.small_product, reference.small_span)
            );
        }
        // Unmeasured: another model of family 25, the Xeon of model 167, another vendor.
        assert_eq!(shipped(amd, 25, 33), None);
        assert_eq!(shipped("GenuineIntel", 6, 167), None);
        assert_eq!(shipped("GenuineIntel", 25, 17), None);
        let other = Machine {
            model: 33,
            ..zen4.clone()
        };
        assert_eq!(other.with_shipped(amd), (other.clone(), None));
    }

    /// Issue 53: the hint for a CPU without measured sizes is given once per CPU, remembered
    /// across calls (and processes) in its directory, and never for a measured one.
    #[test]
    fn the_tune_hint_is_given_once_per_unmeasured_cpu() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cpus = dir.path().join("teil").join("cpus");
        let m = Machine {
            name: "Some CPU".into(),
            family: 6,
            model: 167,
            ..Machine::reference()
        };
        let first = hint_for(&m, "GenuineIntel", Source::Formula, &cpus).expect("a hint");
        assert!(first.contains("`teil tune`"), "{first}");
        assert!(first.contains("Some CPU, family 6 model 167"), "{first}");
        assert_eq!(first.lines().count(), 1);
        assert_eq!(hint_for(&m, "GenuineIntel", Source::Formula, &cpus), None);
        // Another model is another CPU: its own hint, once.
        let other = Machine {
            model: 85,
            ..m.clone()
        };
        assert!(hint_for(&other, "GenuineIntel", Source::Formula, &cpus).is_some());
        assert_eq!(
            hint_for(&other, "GenuineIntel", Source::Formula, &cpus),
            None
        );
        // Measured sizes: no hint, and nothing remembered.
        let fresh = dir.path().join("fresh");
        for source in [Source::Profile, Source::Shipped(&SHIPPED[0])] {
            assert_eq!(hint_for(&m, "GenuineIntel", source, &fresh), None);
        }
        assert!(!fresh.exists());
        // Where the hint cannot be remembered, it is not given (rather than on every run).
        let blocked = dir.path().join("a-file");
        std::fs::write(&blocked, "").unwrap();
        assert_eq!(
            hint_for(&m, "GenuineIntel", Source::Formula, &blocked),
            None
        );
    }

    #[test]
    fn the_host_is_described_with_caches_in_range() {
        let m = Machine::host();
        for c in [m.l1d, m.l2, m.l3] {
            assert!(
                (CACHE_RANGE.0..=CACHE_RANGE.1).contains(&c),
                "{}",
                m.summary()
            );
        }
        assert!([0, 128, 256, 512].contains(&m.vector_bits));
        // Whatever the host, its description reads back as itself.
        assert_eq!(Machine::parse(&m.to_text()).as_ref(), Ok(m));
        // On Linux the caches come from sysfs, not from the reference.
        if std::path::Path::new("/sys/devices/system/cpu/cpu0/cache/index0").exists() {
            assert!(
                !Machine::unknown().contains(&"l1d"),
                "{:?}",
                Machine::unknown()
            );
        }
    }
}
