//! `teil tune [-o FILE] [--candidates N,...] [--span-candidates K,...] [--seconds S] [--rounds R] [--cc CC]
//! [--cflags FLAGS] [--describe]`: measures the small products' limits on this machine
//! (`teil_cbackend::tune`) and writes the machine's description with it, by default where
//! every `host` kernel picks it up (`teil_cbackend::machine::profile_path`). `--describe`
//! prints the host's description instead, measuring nothing.
//!
//! Exit codes: 0 written; 2 usage, compiler or I/O problems; 130 interrupted (Ctrl-C), with
//! nothing written.

use crate::input::fail;
use teil_cbackend::machine::{profile_path, Machine};
use teil_cbackend::tune::{self, TuneError, TuneOptions};

/// What `teil tune` was asked.
#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    /// Write the description here (atomically) instead of
    /// `$XDG_CONFIG_HOME/teil/machine.txt` (`~/.config/teil/machine.txt`), where `host`
    /// reads it; `-` prints it.
    #[arg(short, long)]
    pub output: Option<String>,
    /// Sizes `n` of the `n x n x n` products timed, ascending, each from 17 to 4096
    /// [default: 96,128,160,192,224,256,288,320,384,448,512].
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    pub candidates: Option<Vec<u64>>,
    /// Terms `K` of the `64 x K x 256` products timed for the small products' span limit,
    /// ascending, each from 16 to 65536 [default: 128,256,512,1024,2048,4096,7168].
    #[arg(long, value_delimiter = ',', value_name = "K,K,...")]
    pub span_candidates: Option<Vec<u64>>,
    /// Each timing calls a kernel for at least this long (and at least 3 times).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.05)]
    pub seconds: f64,
    /// Rounds of timings (each form's time is its minimum over them).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// The C compiler to run (looked up on PATH).
    #[arg(long, default_value = "cc")]
    pub cc: String,
    /// Compiler flags [default: -O3 -march=native].
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub cflags: Option<String>,
    /// Print this machine's description as `host` reads it (from /sys, cpuid and a
    /// matching profile) and stop, measuring nothing: a file to emit kernels for this
    /// machine elsewhere with `--target-cpu FILE`.
    #[arg(long)]
    pub describe: bool,
}

pub fn tune(a: &TuneArgs) -> u8 {
    if a.describe {
        let host = Machine::host();
        let mut text = host.to_text();
        // Where each size came from: a measurement (the user's profile or the one shipped for
        // this CPU model), or the formula.
        let source = Machine::host_source().describe();
        for (size, measured, otherwise) in [
            (
                "small_product",
                host.small_product.is_some(),
                "the formula (no measurement for this CPU)",
            ),
            (
                "small_span",
                host.small_span.is_some(),
                "the formula (no measurement for this CPU)",
            ),
            (
                "small_product_f32",
                host.small_product_f32.is_some(),
                "small_product (no measurement of binary32 products for this CPU)",
            ),
        ] {
            let from = if measured { source.as_str() } else { otherwise };
            text.push_str(&format!("# {size}: from {from}\n"));
        }
        text.push_str("# l2_block: from the formula (a quarter of L2)\n");
        if !Machine::unknown().is_empty() {
            text.push_str(&format!(
                "# not readable here, the reference's values: {}\n",
                Machine::unknown().join(", ")
            ));
        }
        return match crate::einsum::write_output(a.output.as_deref().filter(|o| *o != "-"), &text) {
            Ok(()) => 0,
            Err(e) => {
                fail(&e);
                2
            }
        };
    }
    let defaults = TuneOptions::default();
    let opts = TuneOptions {
        candidates: a.candidates.clone().unwrap_or(defaults.candidates),
        span_candidates: a
            .span_candidates
            .clone()
            .unwrap_or(defaults.span_candidates),
        seconds: a.seconds,
        rounds: a.rounds,
        cc: a.cc.clone(),
        cflags: a.cflags.clone().or(defaults.cflags),
        cancel: crate::interrupt::cancel_on_signal(),
    };
    let host = Machine::host().unmeasured();
    crate::out::eprint(&format!("tuning for {}\n", host.summary()));
    // A bar on a terminal (candidates measured of those that may be), else a line per step.
    let bar = std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
        let bar = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} candidates, {msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    });
    let outcome = tune::tune(&host, &opts, &mut |step| match &bar {
        Some(bar) => {
            bar.set_length(step.total as u64);
            bar.set_position(step.done as u64);
            bar.set_message(step.what.to_string());
        }
        None => crate::out::eprint(&format!("  {}\n", step.what)),
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let tuned = match outcome {
        Ok(t) => t,
        Err(TuneError::Interrupted) => {
            fail("interrupted; nothing written");
            return 130;
        }
        Err(e) => {
            fail(&e.to_string());
            return 2;
        }
    };
    let text = tuned.to_text();
    let sizes = tuned.machine.sizes();
    let dest = match a.output.as_deref() {
        Some("-") => None,
        Some(path) => Some(std::path::PathBuf::from(path)),
        None => match profile_path() {
            Some(p) => Some(p),
            None => {
                fail("no place for the profile: set XDG_CONFIG_HOME or HOME, or give -o FILE");
                return 2;
            }
        },
    };
    match dest {
        None => crate::out::print(&text),
        Some(path) => {
            if a.output.is_none() {
                if let Some(dir) = path.parent() {
                    if let Err(e) = std::fs::create_dir_all(dir) {
                        fail(&format!("cannot create {}: {e}", dir.display()));
                        return 2;
                    }
                }
            }
            if let Err(e) = teil_io::files::write_atomically(&path, text.as_bytes()) {
                fail(&e.to_string());
                return 2;
            }
            crate::out::eprint(&format!(
                "small products up to {} rows and columns ({} in binary32) and {} doubles of \
                 terms take the dot kernel's tile; written to {}\n",
                sizes.small_product,
                sizes.small_product_f32,
                sizes.small_span,
                path.display()
            ));
        }
    }
    0
}
