//! Compiling generated kernels with the system C compiler and running them.
//!
//! Kernels and the generated [`driver`](crate::driver) are written to a fresh temporary
//! directory, compiled with `CC FLAGS... -o driver kernels.c driver.c` (no shell), and the
//! driver runs as a separate process, so sanitizer-instrumented builds
//! (`-fsanitize=address,undefined`) work and cannot disturb the Rust process. Many kernels and
//! many jobs go into one compilation and one process ([`run_batch`]).
//!
//! On any failure the directory is kept and its path is part of the error, so the generated
//! source can be inspected.

use crate::ir::{Kernel, Role};
use ndarray::{ArrayD, IxDyn};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The value the runner writes into the logical cells of output-only parameters before a call.
/// The ABI leaves them unspecified; a recognisable finite value makes a kernel that forgets to
/// write one visible.
pub const OUTPUT_CANARY: f64 = 7.25e300;

/// Which C compiler to run, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolchain {
    /// The compiler command, looked up on `PATH` (default `cc`).
    pub cc: String,
    /// Flags placed before the sources (default `-O2`).
    pub cflags: Vec<String>,
}

impl Default for Toolchain {
    fn default() -> Self {
        Toolchain {
            cc: "cc".to_string(),
            cflags: vec!["-O2".to_string()],
        }
    }
}

impl Toolchain {
    /// Replaces the flags by a whitespace-separated list (`--cflags "-O1 -g"`).
    pub fn with_cflags(mut self, flags: &str) -> Self {
        self.cflags = flags.split_whitespace().map(str::to_string).collect();
        self
    }
}

/// One call of one kernel of a batch.
#[derive(Clone, Debug)]
pub struct Job {
    /// Index into the batch's kernels.
    pub kernel: usize,
    /// Logical values of the kernel's input parameters, by TeIL variable name (extra entries
    /// are ignored). NaN stands for the undefined value; an input not given starts undefined.
    pub inputs: BTreeMap<String, ArrayD<f64>>,
}

/// What one call left behind.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Every parameter's logical contents after the call, by TeIL variable name.
    pub values: BTreeMap<String, ArrayD<f64>>,
    /// Parameters with a non-zero padding cell after the call (must be empty).
    pub nonzero_padding: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("input `{var}` has shape {found:?}, but the program declares {expected:?}")]
    InputShape {
        var: String,
        expected: Vec<u64>,
        found: Vec<usize>,
    },
    #[error("job {job} names kernel {kernel}, but the batch has {count}")]
    NoSuchKernel {
        job: usize,
        kernel: usize,
        count: usize,
    },
    #[error("cannot run the C compiler `{cc}`: {error} (generated source kept at {kept})")]
    CompilerNotFound {
        cc: String,
        error: std::io::Error,
        kept: PathBuf,
    },
    #[error("the C compiler `{cc}` failed ({status}); generated source kept at {kept}\n{message}")]
    CompileFailed {
        cc: String,
        status: String,
        message: String,
        kept: PathBuf,
    },
    #[error("the C compiler `{cc}` did not finish within {limit:?} and was stopped; generated source kept at {kept}")]
    CompilerTimedOut {
        cc: String,
        limit: Duration,
        kept: PathBuf,
    },
    #[error("the compiled kernel failed ({status}); generated source kept at {kept}\n{message}")]
    KernelFailed {
        status: String,
        message: String,
        kept: PathBuf,
    },
    #[error("the kernels' buffers need {bytes} bytes, more than this machine can provide")]
    TooLarge { bytes: u64 },
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunError {
    let what = what.into();
    move |error| RunError::Io { what, error }
}

/// Compiles `kernels` into one driver and runs every job in one process.
pub fn run_batch(
    tc: &Toolchain,
    kernels: &[&Kernel],
    jobs: &[Job],
) -> Result<Vec<Outcome>, RunError> {
    let input = encode(kernels, jobs)?;
    let dir = tempfile::Builder::new()
        .prefix("teil-cc-")
        .tempdir()
        .map_err(io("cannot create a temporary directory"))?;
    let path = dir.path().to_path_buf();
    let kernels_c = path.join("kernels.c");
    let driver_c = path.join("driver.c");
    let exe = path.join("driver");
    std::fs::write(&kernels_c, crate::print::module(kernels))
        .map_err(io("cannot write the generated source"))?;
    std::fs::write(&driver_c, crate::driver::source(kernels))
        .map_err(io("cannot write the generated driver"))?;

    let args = [
        OsStr::new("-o"),
        exe.as_os_str(),
        kernels_c.as_os_str(),
        driver_c.as_os_str(),
    ];
    if let Err(e) = compile(tc, &args, None, &kernels_c) {
        let _ = dir.keep(); // the error names the source in it
        return Err(e);
    }

    let in_bin = path.join("input.bin");
    let out_bin = path.join("output.bin");
    std::fs::write(&in_bin, &input).map_err(io("cannot write the kernel inputs"))?;
    let ran = Command::new(&exe).arg(&in_bin).arg(&out_bin).output();
    let ran = match ran {
        Ok(r) => r,
        Err(e) => {
            return Err(RunError::KernelFailed {
                status: "not started".to_string(),
                message: e.to_string(),
                kept: dir.keep().join("kernels.c"),
            })
        }
    };
    // The driver prints nothing itself, so anything on stderr (a sanitizer report, even a
    // recoverable one) is a failure.
    if !ran.status.success() || !ran.stderr.is_empty() {
        return Err(RunError::KernelFailed {
            status: ran.status.to_string(),
            message: String::from_utf8_lossy(&ran.stderr).into_owned(),
            kept: dir.keep().join("kernels.c"),
        });
    }
    let output = std::fs::read(&out_bin).map_err(io("cannot read the kernel outputs"))?;
    decode(kernels, jobs, &output).ok_or_else(|| RunError::KernelFailed {
        status: "exit status 0".to_string(),
        message: format!(
            "the driver wrote {} bytes, which does not match the parameters",
            output.len()
        ),
        kept: dir.keep().join("kernels.c"),
    })
}

/// Runs the compiler of `tc` as `CC FLAGS ARGS...` (no shell) and waits for it, at most
/// `timeout` when one is given (then the compiler is killed). Errors name `source`, which the
/// caller keeps. Every compilation of the backend goes through
/// here (the batch driver above, [`crate::shared`]).
pub(crate) fn compile(
    tc: &Toolchain,
    args: &[&OsStr],
    timeout: Option<Duration>,
    source: &Path,
) -> Result<(), RunError> {
    let kept = || source.to_path_buf();
    let child = Command::new(&tc.cc)
        .args(&tc.cflags)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(error) => {
            return Err(RunError::CompilerNotFound {
                cc: tc.cc.clone(),
                error,
                kept: kept(),
            })
        }
    };
    // The compiler's messages are read on their own thread, so a compiler that fills the pipe
    // cannot block while this one waits for it to exit.
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut e) = stderr {
            let _ = std::io::Read::read_to_end(&mut e, &mut bytes);
        }
        bytes
    });
    let status = match timeout {
        None => child.wait(),
        Some(limit) => {
            let start = std::time::Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(status)) => break Ok(status),
                    Ok(None) if start.elapsed() >= limit => {
                        let _ = child.kill();
                        let _ = child.wait();
                        // Not joined: a grandchild (`cc1`, `ld`) may still hold the pipe open.
                        drop(reader);
                        return Err(RunError::CompilerTimedOut {
                            cc: tc.cc.clone(),
                            limit,
                            kept: kept(),
                        });
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                    Err(e) => break Err(e),
                }
            }
        }
    };
    let message = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let status = status.map_err(io(format!("cannot wait for the C compiler `{}`", tc.cc)))?;
    // Warnings fail the compilation only when the flags make them errors (`-Werror`).
    if !status.success() {
        return Err(RunError::CompileFailed {
            cc: tc.cc.clone(),
            status: status.to_string(),
            message,
            kept: kept(),
        });
    }
    Ok(())
}

/// Compiles and runs one kernel once.
pub fn run(
    tc: &Toolchain,
    kernel: &Kernel,
    inputs: &BTreeMap<String, ArrayD<f64>>,
) -> Result<Outcome, RunError> {
    let job = Job {
        kernel: 0,
        inputs: inputs.clone(),
    };
    let mut out = run_batch(tc, &[kernel], &[job])?;
    out.pop().ok_or_else(|| RunError::Io {
        what: "the driver returned no result".to_string(),
        error: std::io::Error::other("empty output"),
    })
}

fn encode(kernels: &[&Kernel], jobs: &[Job]) -> Result<Vec<u8>, RunError> {
    // Size everything first, so that a batch too large for memory is an error, not an abort.
    let mut total = 0u64;
    for (j, job) in jobs.iter().enumerate() {
        let k = kernels.get(job.kernel).ok_or(RunError::NoSuchKernel {
            job: j,
            kernel: job.kernel,
            count: kernels.len(),
        })?;
        total = k
            .params
            .iter()
            .try_fold(total.saturating_add(8), |t, &p| {
                k.buffer(p).padded_len().checked_mul(8)?.checked_add(t)
            })
            .unwrap_or(u64::MAX);
    }
    let too_large = || RunError::TooLarge { bytes: total };
    let mut buf: Vec<u8> = Vec::new();
    buf.try_reserve_exact(usize::try_from(total).map_err(|_| too_large())?)
        .map_err(|_| too_large())?;
    for job in jobs {
        let Some(k) = kernels.get(job.kernel) else {
            continue;
        };
        buf.extend_from_slice(&(job.kernel as u64).to_ne_bytes());
        for &p in &k.params {
            let b = k.buffer(p);
            let var = b.var.clone().unwrap_or_default();
            let input = matches!(b.role, Role::Param { input: true, .. });
            let start = buf.len();
            buf.resize(start + b.padded_len() as usize * 8, 0);
            let given = job.inputs.get(&var).filter(|_| input);
            if let Some(value) = given {
                let found: Vec<usize> = value.shape().to_vec();
                if found.len() != b.logical.len()
                    || found.iter().zip(&b.logical).any(|(&f, &l)| f as u64 != l)
                {
                    return Err(RunError::InputShape {
                        var,
                        expected: b.logical.clone(),
                        found,
                    });
                }
            }
            // `iter` visits elements in logical row-major order whatever the memory layout. An
            // input the caller does not supply starts undefined; output-only parameters get
            // the canary.
            let fill = if input { f64::NAN } else { OUTPUT_CANARY };
            let mut values = given.map(|v| v.iter().copied());
            let n = *b.logical.last().unwrap_or(&1) as usize;
            for (row, logical) in padded_rows(&b.logical, &b.padded) {
                if !logical {
                    continue;
                }
                for i in 0..n {
                    let x = values.as_mut().and_then(Iterator::next).unwrap_or(fill);
                    let at = start + 8 * (row + i);
                    buf[at..at + 8].copy_from_slice(&x.to_ne_bytes());
                }
            }
        }
    }
    Ok(buf)
}

fn decode(kernels: &[&Kernel], jobs: &[Job], bytes: &[u8]) -> Option<Vec<Outcome>> {
    if bytes.len() % 8 != 0 {
        return None;
    }
    let at = |i: usize| {
        let c = &bytes[8 * i..8 * i + 8];
        f64::from_ne_bytes(c.try_into().unwrap_or([0; 8]))
    };
    let total = bytes.len() / 8;
    let mut next = 0usize;
    let mut out = Vec::new();
    for job in jobs {
        let k = kernels.get(job.kernel)?;
        let mut values = BTreeMap::new();
        let mut nonzero_padding = Vec::new();
        for &p in &k.params {
            let b = k.buffer(p);
            let start = next;
            next = next.checked_add(b.padded_len() as usize)?;
            if next > total {
                return None;
            }
            let n = *b.logical.last().unwrap_or(&1) as usize;
            let p = *b.padded.last().unwrap_or(&1) as usize;
            let mut logical = Vec::with_capacity(b.logical_len() as usize);
            let mut zero = true;
            for (row, is_logical) in padded_rows(&b.logical, &b.padded) {
                let row = start + row;
                let kept = if is_logical { n } else { 0 };
                logical.extend((row..row + kept).map(at));
                zero &= (row + kept..row + p).all(|i| at(i) == 0.0);
            }
            let var = b.var.clone().unwrap_or_default();
            if !zero {
                nonzero_padding.push(var.clone());
            }
            let shape: Vec<usize> = b.logical.iter().map(|&n| n as usize).collect();
            values.insert(var, ArrayD::from_shape_vec(IxDyn(&shape), logical).ok()?);
        }
        out.push(Outcome {
            values,
            nonzero_padding,
        });
    }
    (next == total).then_some(out)
}

/// The offset of every row of a padded buffer (all dimensions but the last; the last is
/// contiguous), in row-major order, with whether the row holds logical cells. A scalar is one
/// row of one logical cell.
pub(crate) fn padded_rows(logical: &[u64], padded: &[u64]) -> Vec<(usize, bool)> {
    let k = padded.len().saturating_sub(1);
    let row_len = padded.last().copied().unwrap_or(1) as usize;
    let mut rows = vec![(0usize, true)];
    for d in 0..k {
        let inner = padded[d + 1..k].iter().product::<u64>() as usize * row_len;
        let mut next = Vec::with_capacity(rows.len() * padded[d] as usize);
        for &(off, logical_row) in &rows {
            for i in 0..padded[d] {
                next.push((off + i as usize * inner, logical_row && i < logical[d]));
            }
        }
        rows = next;
    }
    rows
}
