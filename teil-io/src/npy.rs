//! Reading and writing NumPy `.npy` files (format versions 1.0, 2.0 and 3.0).
//!
//! Written here rather than taken from `ndarray-npy` because `teil run` must say precisely what
//! is wrong with a file (bad magic, truncated data, Fortran order, the dtype found) and accept
//! `float32` by widening it; the format is a magic string, a little-endian header length, a
//! Python dict literal and the raw data, which takes less code than adapting another crate's
//! error type.
//!
//! Read: `float64` and `float32`, little- or big-endian, C order, any shape including `()`;
//! [`read_typed`] also says which (a variable declared `f32` takes only float32 data, E0605).
//! Written: `float64`, or `float32` for a variable declared `f32` ([`to_bytes_as`]),
//! little-endian, C order, format 1.0 (3.0 only if the header needs it).

use ndarray::{ArrayD, IxDyn};
use std::collections::TryReserveError;
use teil::ast::ElemType;
use teil::diagnostic::Bytes;

/// An array as this toolchain holds it: NaN stands for the undefined value.
pub type Tensor = ArrayD<f64>;

const MAGIC: &[u8] = b"\x93NUMPY";

/// What can be wrong with a `.npy` file. Messages describe the file, not the variable; the
/// caller adds which variable it was meant for.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NpyError {
    #[error("cannot read the file: {0}")]
    Io(String),
    #[error("not a .npy file (it does not start with the NumPy magic string)")]
    BadMagic,
    #[error("unsupported .npy format version {0}.{1}")]
    Version(u8, u8),
    #[error("the file ends inside its header")]
    TruncatedHeader,
    #[error("malformed .npy header: {0}")]
    Header(String),
    #[error("dtype `{0}` is not supported; save the array as float64 (or float32)")]
    Dtype(String),
    #[error("the array is stored in Fortran order; save it in C order (numpy.ascontiguousarray)")]
    FortranOrder,
    #[error("the data is truncated: the header promises {expected} bytes, the file has {found}")]
    Truncated { expected: u64, found: u64 },
    #[error("the file has {0} bytes after the array data")]
    TrailingData(u64),
    /// Memory for the file or its values could not be reserved (E0703).
    #[error("out of memory: cannot allocate {} to read the file", Bytes(*bytes))]
    OutOfMemory { bytes: u64 },
    /// [`read_as`] was told the shape to expect, and the header says another.
    #[error("the array has shape {found:?}, expected {expected:?}")]
    Shape {
        expected: Vec<u64>,
        found: Vec<usize>,
    },
    #[error("the header has {0} bytes, more than the {MAX_HEADER} a .npy file of this toolchain may have")]
    HeaderTooLarge(u64),
}

/// The longest header read (NumPy writes a few dozen bytes; format 2.0 allows 4 GiB).
pub const MAX_HEADER: u64 = 1 << 20;

/// Element types we read.
#[derive(Clone, Copy)]
enum Dtype {
    F64 { big: bool },
    F32 { big: bool },
}

/// What a `.npy` header says: the element type, the shape, where the data starts and how many
/// bytes it has.
struct Layout {
    dtype: Dtype,
    shape: Vec<usize>,
    data_start: usize,
    data_len: u64,
    count: u64,
}

/// The length of the header (from the fixed prefix of at least 12 bytes, or fewer for a file
/// that short) and where it starts.
fn header_span(bytes: &[u8]) -> Result<(usize, usize, bool), NpyError> {
    if bytes.len() < MAGIC.len() + 2 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(
            if bytes.len() < MAGIC.len() + 2 && MAGIC.starts_with(bytes) && !bytes.is_empty() {
                NpyError::TruncatedHeader
            } else {
                NpyError::BadMagic
            },
        );
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len_size, utf8) = match major {
        1 => (2, false),
        2 => (4, false),
        3 => (4, true),
        _ => return Err(NpyError::Version(major, minor)),
    };
    let start = 8 + len_size;
    let len_bytes = bytes.get(8..start).ok_or(NpyError::TruncatedHeader)?;
    let header_len = len_bytes
        .iter()
        .rev()
        .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
    Ok((start, header_len, utf8))
}

/// Reads the header at the start of `bytes` (which holds at least the whole header).
fn layout(bytes: &[u8]) -> Result<Layout, NpyError> {
    let (start, header_len, utf8) = header_span(bytes)?;
    let header = bytes
        .get(start..start.saturating_add(header_len))
        .ok_or(NpyError::TruncatedHeader)?;
    let header = if utf8 {
        std::str::from_utf8(header).map_err(|_| NpyError::Header("not UTF-8".into()))?
    } else {
        if !header.is_ascii() {
            return Err(NpyError::Header("not ASCII".into()));
        }
        std::str::from_utf8(header).map_err(|_| NpyError::Header("not ASCII".into()))?
    };
    let (descr, fortran, shape) = parse_header(header)?;
    let dtype = match descr.as_str() {
        "<f8" => Dtype::F64 { big: false },
        ">f8" => Dtype::F64 { big: true },
        "<f4" => Dtype::F32 { big: false },
        ">f4" => Dtype::F32 { big: true },
        other => return Err(NpyError::Dtype(other.to_string())),
    };
    if fortran && shape.iter().filter(|&&n| n > 1).count() > 1 {
        return Err(NpyError::FortranOrder);
    }
    let width: u64 = match dtype {
        Dtype::F64 { .. } => 8,
        Dtype::F32 { .. } => 4,
    };
    let count = shape
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n as u64))
        .ok_or_else(|| NpyError::Header("the shape has too many elements".into()))?;
    let data_len = count
        .checked_mul(width)
        .ok_or_else(|| NpyError::Header("the shape has too many elements".into()))?;
    Ok(Layout {
        dtype,
        shape,
        data_start: start + header_len,
        data_len,
        count,
    })
}

/// The data's length against the layout: truncated or trailing bytes are errors.
fn check_data_len(l: &Layout, found: u64) -> Result<(), NpyError> {
    let expected = l.data_len;
    if found < expected {
        return Err(NpyError::Truncated { expected, found });
    }
    if found > expected {
        return Err(NpyError::TrailingData(found - expected));
    }
    Ok(())
}

/// Parses the bytes of a `.npy` file.
pub fn from_bytes(bytes: &[u8]) -> Result<Tensor, NpyError> {
    let l = layout(bytes)?;
    let data = &bytes[l.data_start..];
    check_data_len(&l, data.len() as u64)?;
    decode(&l, data)
}

/// A vector of `len` values from `items`, its memory reserved fallibly (a header may promise
/// more than this machine has).
fn try_vec(len: usize, items: impl Iterator<Item = f64>) -> Result<Vec<f64>, TryReserveError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)?;
    v.extend(items.take(len));
    Ok(v)
}

/// The values of `data`, exactly the layout's data bytes.
fn decode(l: &Layout, data: &[u8]) -> Result<Tensor, NpyError> {
    let (count, dtype, shape) = (l.count, l.dtype, l.shape.clone());
    let len = usize::try_from(count).map_err(|_| NpyError::OutOfMemory {
        bytes: count.saturating_mul(8),
    })?;
    let oom = |_| NpyError::OutOfMemory {
        bytes: count.saturating_mul(8),
    };
    let values: Vec<f64> = match dtype {
        Dtype::F64 { big } => {
            let cells = data.chunks_exact(8).map(|c| {
                let b: [u8; 8] = c.try_into().unwrap_or_default();
                if big {
                    f64::from_be_bytes(b)
                } else {
                    f64::from_le_bytes(b)
                }
            });
            try_vec(len, cells).map_err(oom)?
        }
        Dtype::F32 { big } => {
            let cells = data.chunks_exact(4).map(|c| {
                let b: [u8; 4] = c.try_into().unwrap_or_default();
                f64::from(if big {
                    f32::from_be_bytes(b)
                } else {
                    f32::from_le_bytes(b)
                })
            });
            try_vec(len, cells).map_err(oom)?
        }
    };
    ArrayD::from_shape_vec(IxDyn(&shape), values).map_err(|e| NpyError::Header(e.to_string()))
}

/// Reads a `.npy` file; a FIFO, directory or device is refused without blocking
/// ([`crate::files::open_regular`]).
#[cfg(unix)]
pub fn read(path: &std::path::Path) -> Result<Tensor, NpyError> {
    read_as(path, None)
}

/// Reads a `.npy` file, header first: its dtype, its shape (against `shape`, where given) and
/// the file's size against the header are checked before any data is read, so that a file
/// that cannot be right costs nothing whatever size it claims or has (a 3 GB sparse file
/// whose header says 10 cells is refused at once).
#[cfg(unix)]
pub fn read_as(path: &std::path::Path, shape: Option<&[u64]>) -> Result<Tensor, NpyError> {
    read_typed(path, shape).map(|(t, _)| t)
}

/// [`read_as`], with the element type the file stores (`float32` data is returned widened,
/// exactly, as binary64 numbers).
#[cfg(unix)]
pub fn read_typed(
    path: &std::path::Path,
    shape: Option<&[u64]>,
) -> Result<(Tensor, ElemType), NpyError> {
    use std::io::Read;
    let io = |e: std::io::Error| NpyError::Io(e.to_string());
    let (f, file_len) =
        crate::files::open_regular(path).map_err(|e| NpyError::Io(e.to_string()))?;
    let mut f = f.take(file_len);
    // The fixed prefix: magic, version, header length.
    let mut head = Vec::new();
    Read::by_ref(&mut f)
        .take(12)
        .read_to_end(&mut head)
        .map_err(io)?;
    let (start, header_len, _) = header_span(&head)?;
    if header_len as u64 > MAX_HEADER {
        return Err(NpyError::HeaderTooLarge(header_len as u64));
    }
    let need = (start + header_len).saturating_sub(head.len()) as u64;
    Read::by_ref(&mut f)
        .take(need)
        .read_to_end(&mut head)
        .map_err(io)?;
    let l = layout(&head)?;
    if let Some(expected) = shape {
        if !expected
            .iter()
            .copied()
            .eq(l.shape.iter().map(|&n| n as u64))
        {
            return Err(NpyError::Shape {
                expected: expected.to_vec(),
                found: l.shape.clone(),
            });
        }
    }
    check_data_len(&l, file_len.saturating_sub(l.data_start as u64))?;
    // The prefix may hold the first data bytes (a header shorter than 12 bytes).
    let mut data = head.split_off(l.data_start.min(head.len()));
    let want =
        usize::try_from(l.data_len).map_err(|_| NpyError::OutOfMemory { bytes: l.data_len })?;
    data.try_reserve_exact(want.saturating_sub(data.len()))
        .map_err(|_| NpyError::OutOfMemory { bytes: l.data_len })?;
    Read::by_ref(&mut f).read_to_end(&mut data).map_err(io)?;
    if data.len() as u64 != l.data_len {
        return Err(NpyError::Io(
            "the file changed size while it was read".into(),
        ));
    }
    let elem = match l.dtype {
        Dtype::F64 { .. } => ElemType::F64,
        Dtype::F32 { .. } => ElemType::F32,
    };
    Ok((decode(&l, &data)?, elem))
}

/// The bytes of a `.npy` file holding `t` as little-endian float64 in C order.
pub fn to_bytes(t: &Tensor) -> Vec<u8> {
    to_bytes_as(t, ElemType::F64)
}

/// The bytes of a `.npy` file holding `t` as little-endian values of `elem` in C order: for
/// `f32`, each value rounded to binary32 (exact for the values of a variable declared `f32`).
pub fn to_bytes_as(t: &Tensor, elem: ElemType) -> Vec<u8> {
    let shape = match t.shape() {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let descr = match elem {
        ElemType::F64 => "<f8",
        ElemType::F32 => "<f4",
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic, version, length field, header and newline: padded to a multiple of 64 bytes.
    let fixed = MAGIC.len() + 2 + 2;
    let total = (fixed + header.len() + 1).div_ceil(64) * 64;
    let v1 = total - fixed <= usize::from(u16::MAX);
    let fixed = if v1 { fixed } else { fixed + 2 };
    let total = (fixed + header.len() + 1).div_ceil(64) * 64;
    header.push_str(&" ".repeat(total - fixed - header.len() - 1));
    header.push('\n');
    let mut out = Vec::with_capacity(total + elem.size() * t.len());
    out.extend_from_slice(MAGIC);
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[3, 0]);
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    for &x in t.iter() {
        match elem {
            ElemType::F64 => out.extend_from_slice(&x.to_le_bytes()),
            ElemType::F32 => out.extend_from_slice(&(x as f32).to_le_bytes()),
        }
    }
    out
}

/// Parses `{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }` (keys in any order).
fn parse_header(h: &str) -> Result<(String, bool, Vec<usize>), NpyError> {
    let bad = |m: &str| NpyError::Header(m.to_string());
    let body = h
        .trim()
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .ok_or_else(|| bad("the header is not a dictionary"))?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    let mut rest = body.trim_start();
    while !rest.is_empty() {
        let (key, after) = quoted(rest).ok_or_else(|| bad("expected a quoted key"))?;
        let after = after
            .trim_start()
            .strip_prefix(':')
            .ok_or_else(|| bad("expected `:` after a key"))?
            .trim_start();
        rest = match key {
            "descr" => {
                let (v, after) = quoted(after)
                    .ok_or_else(|| NpyError::Dtype("a structured dtype".to_string()))?;
                descr = Some(v.to_string());
                after
            }
            "fortran_order" => {
                if let Some(a) = after.strip_prefix("True") {
                    fortran = Some(true);
                    a
                } else if let Some(a) = after.strip_prefix("False") {
                    fortran = Some(false);
                    a
                } else {
                    return Err(bad("`fortran_order` is neither True nor False"));
                }
            }
            "shape" => {
                let inner = after
                    .strip_prefix('(')
                    .ok_or_else(|| bad("`shape` is not a tuple"))?;
                let close = inner
                    .find(')')
                    .ok_or_else(|| bad("`shape` is not a tuple"))?;
                let mut dims = Vec::new();
                for part in inner[..close].split(',') {
                    let part = part.trim();
                    if part.is_empty() {
                        continue;
                    }
                    let part = part.strip_suffix('L').unwrap_or(part);
                    dims.push(
                        part.parse::<usize>()
                            .map_err(|_| bad("`shape` holds a non-integer"))?,
                    );
                }
                shape = Some(dims);
                &inner[close + 1..]
            }
            other => return Err(bad(&format!("unexpected key `{other}`"))),
        };
        rest = rest.trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    match (descr, fortran, shape) {
        (Some(d), Some(f), Some(s)) => Ok((d, f, s)),
        _ => Err(bad(
            "a key (`descr`, `fortran_order` or `shape`) is missing",
        )),
    }
}

/// A single- or double-quoted string at the start of `s`, and the text after it.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let end = s[1..].find(q)? + 1;
    Some((&s[1..end], &s[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::arr2;

    /// A float32 file is written with NumPy's `<f4` header and binary32 bytes, and read back
    /// with its element type; float64 files say theirs.
    #[cfg(unix)]
    #[test]
    fn float32_files_round_trip_with_their_element_type() {
        let t = arr2(&[[0.1f32 as f64, -0.0], [f64::INFINITY, 3.5]]).into_dyn();
        let bytes = to_bytes_as(&t, ElemType::F32);
        // Magic, version and a header padded to 128 bytes, then four binary32 values.
        assert!(std::str::from_utf8(&bytes[10..128])
            .unwrap()
            .starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }"));
        assert_eq!(bytes.len(), 128 + 4 * 4);
        assert_eq!(&bytes[128..132], &0.1f32.to_le_bytes());
        let dir = tempfile::tempdir().unwrap();
        for (elem, b) in [(ElemType::F32, bytes), (ElemType::F64, to_bytes(&t))] {
            let path = dir.path().join("a.npy");
            std::fs::write(&path, &b).unwrap();
            let (back, found) = read_typed(&path, Some(&[2, 2])).unwrap();
            assert_eq!(found, elem);
            let bits = |t: &Tensor| t.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&back), bits(&t));
        }
    }

    #[test]
    fn round_trip_and_alignment() {
        for t in [
            arr2(&[[1.0, -2.5], [f64::NAN, 4.0]]).into_dyn(),
            ndarray::arr0(7.0).into_dyn(),
            ndarray::arr1(&[0.5, -0.0, 3.0]).into_dyn(),
        ] {
            let b = to_bytes(&t);
            let header_end = 10 + usize::from(u16::from_le_bytes([b[8], b[9]]));
            assert_eq!(header_end % 64, 0);
            assert_eq!(b[header_end - 1], b'\n');
            let back = from_bytes(&b).unwrap();
            let bits = |t: &Tensor| t.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&back), bits(&t));
            assert_eq!(back.shape(), t.shape());
        }
    }

    #[test]
    fn header_written_like_numpy() {
        let b = to_bytes(&ndarray::arr1(&[1.0, 2.0, 3.0]).into_dyn());
        let h = std::str::from_utf8(&b[10..128]).unwrap();
        assert!(h.starts_with("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"));
        let s = to_bytes(&ndarray::arr0(1.0).into_dyn());
        assert!(std::str::from_utf8(&s[10..128])
            .unwrap()
            .contains("'shape': ()"));
    }

    /// A hand-built float32 file, as `numpy.save(f, numpy.array([1.5, -2], dtype='<f4'))`.
    #[test]
    fn float32_is_widened() {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[1, 0]);
        let mut h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }".to_string();
        while (10 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        b.extend_from_slice(&(h.len() as u16).to_le_bytes());
        b.extend_from_slice(h.as_bytes());
        b.extend_from_slice(&1.5f32.to_le_bytes());
        b.extend_from_slice(&(-2.0f32).to_le_bytes());
        let t = from_bytes(&b).unwrap();
        assert_eq!(t.as_slice().unwrap(), &[1.5, -2.0]);
    }

    #[test]
    fn errors() {
        assert_eq!(from_bytes(b"hello world, not npy"), Err(NpyError::BadMagic));
        assert_eq!(from_bytes(b""), Err(NpyError::BadMagic));
        let good = to_bytes(&ndarray::arr1(&[1.0, 2.0]).into_dyn());
        assert_eq!(
            from_bytes(&good[..good.len() - 3]),
            Err(NpyError::Truncated {
                expected: 16,
                found: 13
            })
        );
        assert_eq!(from_bytes(&good[..20]), Err(NpyError::TruncatedHeader));
        let mut extra = good.clone();
        extra.push(0);
        assert_eq!(from_bytes(&extra), Err(NpyError::TrailingData(1)));
        let mut int = good.clone();
        let at = int.windows(3).position(|w| w == b"<f8").unwrap();
        int[at + 1] = b'i';
        assert_eq!(from_bytes(&int), Err(NpyError::Dtype("<i8".into())));
        let mut fortran = to_bytes(&ndarray::arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn());
        let at = fortran.windows(5).position(|w| w == b"False").unwrap();
        fortran.splice(at..at + 5, b"True ".iter().copied());
        assert_eq!(from_bytes(&fortran), Err(NpyError::FortranOrder));
        let mut v = good.clone();
        v[6] = 9;
        assert_eq!(from_bytes(&v), Err(NpyError::Version(9, 0)));
    }
}
