//! Checkpoints in the safetensors format: an 8-byte little-endian header length, a
//! JSON header giving each tensor's dtype, shape and byte range, then the raw
//! little-endian data. Files written here load in PyTorch, JAX and candle, and
//! theirs (in F32/F64) load here.
//!
//! Reading is strict: every malformed file — truncated, with bad or overlapping
//! offsets, an unknown dtype, a shape that does not match its byte range, an absurd
//! declared size, invalid UTF-8 — gives an error naming the problem, and no
//! allocation is sized by a declared value before it has been checked against the
//! actual length. Writing is atomic: a temporary file in the same directory, synced,
//! then renamed over the target.
//!
//! Tensors of the other safetensors types (F16, BF16, integers, BOOL: PyTorch's
//! `num_batches_tracked` is I64) are read as [`RawTensor`]s; [`torch`] loads a
//! model from such a file, converting only where the conversion is exact, under
//! the file's own key names, and reports what the model did not use.

pub mod json;
mod store_io;
pub mod torch;

use json::Json;
use std::io::Write;
use std::path::Path;
use tensor::{DType, Element, Error, Result, Tensor};

/// The element types of the safetensors format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileDType {
    /// IEEE single.
    F32,
    /// IEEE double.
    F64,
    /// IEEE half.
    F16,
    /// bfloat16.
    BF16,
    /// Signed integers.
    I64,
    /// Signed integers.
    I32,
    /// Signed integers.
    I16,
    /// Signed integers.
    I8,
    /// Unsigned bytes.
    U8,
    /// One byte, 0 or 1.
    Bool,
}

impl FileDType {
    const ALL: [FileDType; 10] = [
        FileDType::F32,
        FileDType::F64,
        FileDType::F16,
        FileDType::BF16,
        FileDType::I64,
        FileDType::I32,
        FileDType::I16,
        FileDType::I8,
        FileDType::U8,
        FileDType::Bool,
    ];

    /// The name in the header ("F32", "BOOL").
    pub fn name(self) -> &'static str {
        match self {
            FileDType::F32 => "F32",
            FileDType::F64 => "F64",
            FileDType::F16 => "F16",
            FileDType::BF16 => "BF16",
            FileDType::I64 => "I64",
            FileDType::I32 => "I32",
            FileDType::I16 => "I16",
            FileDType::I8 => "I8",
            FileDType::U8 => "U8",
            FileDType::Bool => "BOOL",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            FileDType::F64 | FileDType::I64 => 8,
            FileDType::F32 | FileDType::I32 => 4,
            FileDType::F16 | FileDType::BF16 | FileDType::I16 => 2,
            FileDType::I8 | FileDType::U8 | FileDType::Bool => 1,
        }
    }

    fn parse(name: &str) -> Option<FileDType> {
        FileDType::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl From<DType> for FileDType {
    fn from(d: DType) -> Self {
        match d {
            DType::F32 => FileDType::F32,
            DType::F64 => FileDType::F64,
        }
    }
}

/// A tensor of a type the engine does not compute in, kept as its little-endian
/// bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct RawTensor {
    /// The element type (not F32 or F64).
    pub dtype: FileDType,
    /// The shape.
    pub shape: Vec<usize>,
    /// `numel × dtype.size()` little-endian bytes.
    pub bytes: Vec<u8>,
}

impl RawTensor {
    /// Every value as an f64 (exact for every type here but I64 beyond 2⁵³).
    pub fn values(&self) -> Vec<f64> {
        let b = &self.bytes;
        match self.dtype {
            FileDType::F16 => b
                .chunks_exact(2)
                .map(|c| torch::f16_to_f64(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
            FileDType::BF16 => b
                .chunks_exact(2)
                .map(|c| torch::bf16_to_f64(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
            FileDType::I64 => b
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")) as f64)
                .collect(),
            FileDType::I32 => b
                .chunks_exact(4)
                .map(|c| f64::from(i32::from_le_bytes(c.try_into().expect("4 bytes"))))
                .collect(),
            FileDType::I16 => b
                .chunks_exact(2)
                .map(|c| f64::from(i16::from_le_bytes([c[0], c[1]])))
                .collect(),
            FileDType::I8 => b.iter().map(|&v| f64::from(v as i8)).collect(),
            FileDType::U8 | FileDType::Bool => b.iter().map(|&v| f64::from(v)).collect(),
            FileDType::F32 => b
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes(c.try_into().expect("4 bytes"))))
                .collect(),
            FileDType::F64 => b
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        }
    }

    /// Checks that the bytes are `numel × dtype.size()` long: a raw tensor built
    /// by hand can break this, and the reader refuses such a file, so neither the
    /// writer nor a conversion accepts one.
    pub fn validate(&self, name: &str) -> Result<()> {
        let expected = self
            .shape
            .iter()
            .try_fold(self.dtype.size(), |acc, &d| acc.checked_mul(d));
        if expected != Some(self.bytes.len()) {
            return Err(Error::format(
                "checkpoint",
                format!(
                    "raw tensor '{name}' ({}, shape {:?}) holds {} bytes where its shape and type need {}",
                    self.dtype.name(),
                    self.shape,
                    self.bytes.len(),
                    expected.map_or_else(|| "more than usize::MAX".to_string(), |n| n.to_string())
                ),
            ));
        }
        Ok(())
    }

    /// A BOOL tensor's bytes must be 0 or 1 before they are read as numbers: any
    /// other byte is not a boolean, and converting it to 2.0 would be a silent
    /// wrong value. The file itself keeps such bytes as they are.
    fn check_booleans(&self, name: &str) -> Result<()> {
        if self.dtype != FileDType::Bool {
            return Ok(());
        }
        match self.bytes.iter().enumerate().find(|(_, &v)| v > 1) {
            Some((i, v)) => Err(Error::format(
                "checkpoint",
                format!("BOOL tensor '{name}' holds byte {v} at element {i}; booleans are 0 or 1"),
            )),
            None => Ok(()),
        }
    }

    /// I64 values beyond ±2⁵³ do not survive [`RawTensor::values`]: the first such
    /// element, if any.
    fn inexact_i64(&self) -> Option<(usize, i64)> {
        (self.dtype == FileDType::I64)
            .then(|| {
                self.bytes
                    .chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .enumerate()
                    .find(|(_, v)| v.unsigned_abs() > 1 << 53)
            })
            .flatten()
    }

    /// Rows `start..start + len` of the first axis.
    pub fn rows(&self, start: usize, len: usize) -> Result<RawTensor> {
        self.validate("RawTensor::rows")?;
        let rows = self.shape.first().copied().unwrap_or(0);
        let end = start.checked_add(len).filter(|&end| end <= rows);
        let Some(end) = end else {
            return Err(Error::shape(
                "RawTensor::rows",
                format!("rows {start}.. (length {len}) of {rows}"),
            ));
        };
        let row_bytes = self.bytes.len() / rows.max(1);
        let mut shape = self.shape.clone();
        shape[0] = len;
        Ok(RawTensor {
            dtype: self.dtype,
            shape,
            bytes: self.bytes[start * row_bytes..end * row_bytes].to_vec(),
        })
    }
}

/// A tensor as read from or written to a checkpoint.
#[derive(Clone, Debug)]
pub enum AnyTensor {
    /// Single precision.
    F32(Tensor<f32>),
    /// Double precision.
    F64(Tensor<f64>),
    /// Any other safetensors type, as stored.
    Other(RawTensor),
}

impl AnyTensor {
    /// The element type.
    pub fn dtype(&self) -> FileDType {
        match self {
            AnyTensor::F32(_) => FileDType::F32,
            AnyTensor::F64(_) => FileDType::F64,
            AnyTensor::Other(r) => r.dtype,
        }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            AnyTensor::F32(t) => t.shape(),
            AnyTensor::F64(t) => t.shape(),
            AnyTensor::Other(r) => &r.shape,
        }
    }

    /// Wraps a tensor of a generic element type.
    pub fn from_tensor<T: Element>(t: &Tensor<T>) -> AnyTensor {
        match T::DTYPE {
            DType::F32 => AnyTensor::F32(t.cast()),
            DType::F64 => AnyTensor::F64(t.cast()),
        }
    }

    /// The tensor as element type `T`, which must be its own type (no silent casts).
    pub fn to_tensor<T: Element>(&self, name: &str) -> Result<Tensor<T>> {
        if self.dtype() != FileDType::from(T::DTYPE) {
            return Err(Error::format(
                "checkpoint",
                format!(
                    "tensor '{name}' is {} but {} was expected",
                    self.dtype().name(),
                    T::DTYPE.name()
                ),
            ));
        }
        match self {
            AnyTensor::F32(t) => Ok(t.cast()),
            AnyTensor::F64(t) => Ok(t.cast()),
            AnyTensor::Other(r) => {
                // A raw tensor built by hand may carry an F32 or F64 tag: its
                // bytes decode exactly into that type.
                r.validate(name)?;
                Tensor::from_vec(r.values().into_iter().map(T::from_f64).collect(), &r.shape)
            }
        }
    }

    /// The tensor as element type `T` by a value-preserving conversion (see
    /// [`torch::Convert::Exact`]), with the type it was converted from; a
    /// conversion that would change a value (F64 to F32, an integer beyond the
    /// target's exact range) is an error naming the tensor and the value.
    pub fn to_tensor_exact<T: Element>(
        &self,
        name: &str,
    ) -> Result<(Tensor<T>, Option<&'static str>)> {
        let from = self.dtype().name();
        match self {
            _ if self.dtype() == FileDType::from(T::DTYPE) => Ok((self.to_tensor(name)?, None)),
            AnyTensor::F32(t) => Ok((
                torch::exact_tensor(
                    name,
                    from,
                    t.to_vec().iter().map(|v| f64::from(*v)).collect(),
                    t.shape(),
                )?,
                Some(from),
            )),
            AnyTensor::F64(t) => Ok((
                torch::exact_tensor(name, from, t.to_vec(), t.shape())?,
                Some(from),
            )),
            AnyTensor::Other(r) => {
                r.validate(name)?;
                r.check_booleans(name)?;
                if let Some((i, v)) = r.inexact_i64() {
                    return Err(Error::format(
                        "checkpoint",
                        format!("tensor '{name}' (I64) holds {v} at element {i}, beyond exact float range"),
                    ));
                }
                Ok((
                    torch::exact_tensor(name, from, r.values(), &r.shape)?,
                    Some(from),
                ))
            }
        }
    }

    fn append_bytes(&self, out: &mut Vec<u8>) {
        match self {
            AnyTensor::F32(t) => t.to_vec().iter().for_each(|v| v.to_le_bytes_vec(out)),
            AnyTensor::F64(t) => t.to_vec().iter().for_each(|v| v.to_le_bytes_vec(out)),
            AnyTensor::Other(r) => out.extend_from_slice(&r.bytes),
        }
    }
}

/// Tensors with their names, in order.
pub type NamedTensors = Vec<(String, AnyTensor)>;

/// Named tensors plus string metadata (the header's `__metadata__`).
#[derive(Clone, Debug, Default)]
pub struct Checkpoint {
    /// The tensors, in file order.
    pub tensors: Vec<(String, AnyTensor)>,
    /// Free-form string metadata (optimiser step counts, RNG states, ...).
    pub metadata: Vec<(String, String)>,
}

impl Checkpoint {
    /// The tensor called `name`.
    pub fn get(&self, name: &str) -> Option<&AnyTensor> {
        self.tensors.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// The tensor called `name` as element type `T`, or an error naming it.
    pub fn tensor<T: Element>(&self, name: &str) -> Result<Tensor<T>> {
        self.get(name)
            .ok_or_else(|| Error::format("checkpoint", format!("tensor '{name}' is missing")))?
            .to_tensor(name)
    }

    /// The metadata value for `key`.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The metadata value for `key`, or an error naming it.
    pub fn require_meta(&self, key: &str) -> Result<&str> {
        self.meta(key)
            .ok_or_else(|| Error::format("checkpoint", format!("metadata '{key}' is missing")))
    }
}

/// Bounds on what a reader accepts.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest accepted JSON header, in bytes.
    pub max_header_bytes: usize,
    /// Largest accepted tensor, in elements (by default 2³², or any size a 32-bit
    /// target can address).
    pub max_elements: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_header_bytes: 100 << 20,
            max_elements: usize::try_from(1u64 << 32).unwrap_or(usize::MAX),
        }
    }
}

/// Serialises a checkpoint to bytes.
///
/// ```
/// use nn::checkpoint::{from_bytes, to_bytes, AnyTensor, Checkpoint, Limits};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let w = Tensor::<f32>::from_vec(vec![1.5, -2.0, 0.25, 8.0], &[2, 2])?;
/// let ckpt = Checkpoint {
///     tensors: vec![
///         ("w".into(), AnyTensor::from_tensor(&w)),
///         ("scale".into(), AnyTensor::F64(Tensor::scalar(0.1))),
///     ],
///     metadata: vec![("epoch".into(), "7".into())],
/// };
/// let back = from_bytes(&to_bytes(&ckpt)?, &Limits::default())?;
/// assert!(back.tensor::<f32>("w")?.bit_eq(&w)); // bit for bit
/// assert_eq!(back.tensor::<f64>("scale")?.item()?, 0.1);
/// assert_eq!(back.meta("epoch"), Some("7"));
/// assert!(back.tensor::<f64>("w").is_err()); // F32 is not silently read as F64
/// # Ok(())
/// # }
/// ```
pub fn to_bytes(ckpt: &Checkpoint) -> Result<Vec<u8>> {
    let mut header = String::from("{");
    let mut first = true;
    let mut sep = |h: &mut String| {
        if !first {
            h.push(',');
        }
        first = false;
    };
    let mut keys = std::collections::HashSet::new();
    if let Some((k, _)) = ckpt.metadata.iter().find(|(k, _)| !keys.insert(k.as_str())) {
        return Err(Error::value(
            "checkpoint",
            format!("metadata key '{k}' is repeated (JSON readers keep one of the two values)"),
        ));
    }
    if !ckpt.metadata.is_empty() {
        sep(&mut header);
        header.push_str("\"__metadata__\":{");
        for (i, (k, v)) in ckpt.metadata.iter().enumerate() {
            if i > 0 {
                header.push(',');
            }
            json::write_string(&mut header, k);
            header.push(':');
            json::write_string(&mut header, v);
        }
        header.push('}');
    }
    let mut offset = 0usize;
    let mut names = std::collections::HashSet::new();
    for (name, t) in &ckpt.tensors {
        if name == "__metadata__" || !names.insert(name.as_str()) {
            return Err(Error::value(
                "checkpoint",
                format!("tensor name '{name}' is reserved or repeated"),
            ));
        }
        if let AnyTensor::Other(r) = t {
            r.validate(name)?;
        }
        let bytes = t.shape().iter().product::<usize>() * t.dtype().size();
        sep(&mut header);
        json::write_string(&mut header, name);
        header.push_str(&format!(
            ":{{\"dtype\":\"{}\",\"shape\":{:?},\"data_offsets\":[{},{}]}}",
            t.dtype().name(),
            t.shape(),
            offset,
            offset + bytes
        ));
        offset += bytes;
    }
    header.push('}');
    // Pad the header with spaces to a multiple of 8 bytes, as safetensors does.
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = Vec::with_capacity(8 + header.len() + offset);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for (_, t) in &ckpt.tensors {
        t.append_bytes(&mut out);
    }
    Ok(out)
}

/// One tensor's header entry, validated.
struct Entry {
    name: String,
    dtype: FileDType,
    shape: Vec<usize>,
    begin: usize,
    end: usize,
}

fn bad(detail: impl Into<String>) -> Error {
    Error::format("safetensors", detail)
}

fn parse_entry(name: &str, v: &Json, data_len: usize, limits: &Limits) -> Result<Entry> {
    let Json::Object(fields) = v else {
        return Err(bad(format!(
            "entry '{name}' is {}, not an object",
            v.kind()
        )));
    };
    let (mut dtype, mut shape, mut offsets) = (None, None, None);
    for (k, val) in fields {
        match k.as_str() {
            "dtype" => dtype = Some(val),
            "shape" => shape = Some(val),
            "data_offsets" => offsets = Some(val),
            other => {
                return Err(bad(format!(
                    "entry '{name}' has an unexpected field '{other}'"
                )))
            }
        }
    }
    let dtype = match dtype {
        Some(Json::String(s)) => FileDType::parse(s).ok_or_else(|| {
            bad(format!(
                "tensor '{name}' has dtype '{s}', which safetensors does not define here (F32, F64, F16, BF16, I64, I32, I16, I8, U8, BOOL)"
            ))
        })?,
        _ => return Err(bad(format!("tensor '{name}' has no string dtype"))),
    };
    let dims = match shape {
        Some(Json::Array(a)) => a,
        _ => return Err(bad(format!("tensor '{name}' has no shape array"))),
    };
    let mut shape = Vec::with_capacity(dims.len().min(64));
    let mut numel: usize = 1;
    for d in dims {
        let d = d
            .as_u64()
            .and_then(|d| usize::try_from(d).ok())
            .ok_or_else(|| {
                bad(format!(
                    "tensor '{name}' has a shape entry that is not a size"
                ))
            })?;
        numel = numel
            .checked_mul(d)
            .filter(|&n| n <= limits.max_elements)
            .ok_or_else(|| {
                bad(format!(
                    "tensor '{name}' declares more than {} elements",
                    limits.max_elements
                ))
            })?;
        shape.push(d);
    }
    let (begin, end) = match offsets {
        Some(Json::Array(a)) if a.len() == 2 => match (a[0].as_u64(), a[1].as_u64()) {
            (Some(b), Some(e)) => (b, e),
            _ => return Err(bad(format!("tensor '{name}' has non-integer data_offsets"))),
        },
        _ => {
            return Err(bad(format!(
                "tensor '{name}' needs data_offsets [begin, end]"
            )))
        }
    };
    if begin > end || end > data_len as u64 {
        return Err(bad(format!(
            "tensor '{name}' has data_offsets [{begin}, {end}] outside the {data_len} data bytes"
        )));
    }
    let (begin, end) = (begin as usize, end as usize);
    let want = numel * dtype.size();
    if end - begin != want {
        return Err(bad(format!(
            "tensor '{name}' of shape {shape:?} and dtype {} needs {want} bytes, its range holds {}",
            dtype.name(),
            end - begin
        )));
    }
    Ok(Entry {
        name: name.to_string(),
        dtype,
        shape,
        begin,
        end,
    })
}

fn decode<T: Element>(bytes: &[u8], shape: &[usize]) -> Result<Tensor<T>> {
    let size = T::DTYPE.size();
    let data: Vec<T> = bytes.chunks_exact(size).map(T::from_le_slice).collect();
    Tensor::from_vec(data, shape)
}

/// Parses a checkpoint from bytes.
///
/// ```
/// use nn::checkpoint::{from_bytes, to_bytes, AnyTensor, Checkpoint, Limits};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let x = AnyTensor::from_tensor(&Tensor::<f64>::zeros(&[10])?);
/// let bytes = to_bytes(&Checkpoint { tensors: vec![("x".into(), x)], metadata: vec![] })?;
/// assert_eq!(from_bytes(&bytes, &Limits::default())?.tensors.len(), 1);
/// // Malformed or oversized input is an error naming the problem, never a panic.
/// let e = from_bytes(&bytes[..bytes.len() - 1], &Limits::default()).unwrap_err();
/// assert!(e.to_string().starts_with("safetensors:"), "{e}");
/// let mut huge = bytes.clone();
/// huge[..8].copy_from_slice(&u64::MAX.to_le_bytes()); // an absurd header length
/// assert!(from_bytes(&huge, &Limits::default()).unwrap_err().to_string().contains("exceeds the limit"));
/// let tight = Limits { max_elements: 5, ..Limits::default() };
/// assert!(from_bytes(&bytes, &tight).is_err());
/// # Ok(())
/// # }
/// ```
pub fn from_bytes(bytes: &[u8], limits: &Limits) -> Result<Checkpoint> {
    if bytes.len() < 8 {
        return Err(bad(format!(
            "truncated: {} bytes, the header length alone needs 8",
            bytes.len()
        )));
    }
    let declared = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    if declared > limits.max_header_bytes as u64 {
        return Err(bad(format!(
            "declared header size {declared} exceeds the limit of {} bytes",
            limits.max_header_bytes
        )));
    }
    let hlen = declared as usize;
    if bytes.len() - 8 < hlen {
        return Err(bad(format!(
            "truncated: the header declares {hlen} bytes but only {} follow",
            bytes.len() - 8
        )));
    }
    let text = std::str::from_utf8(&bytes[8..8 + hlen])
        .map_err(|e| bad(format!("the header is not valid UTF-8: {e}")))?;
    let header =
        json::parse(text).map_err(|e| bad(format!("the header is not valid JSON: {e}")))?;
    let Json::Object(fields) = header else {
        return Err(bad(format!(
            "the header is {}, not an object",
            header.kind()
        )));
    };
    let data = &bytes[8 + hlen..];
    let mut ckpt = Checkpoint::default();
    let mut entries = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (name, v) in &fields {
        if !seen.insert(name.as_str()) {
            return Err(bad(format!("the name '{name}' appears twice")));
        }
        if name == "__metadata__" {
            let Json::Object(meta) = v else {
                return Err(bad("__metadata__ is not an object"));
            };
            let mut keys = std::collections::HashSet::new();
            for (k, val) in meta {
                if !keys.insert(k.as_str()) {
                    return Err(bad(format!("metadata key '{k}' appears twice")));
                }
                match val {
                    Json::String(s) => ckpt.metadata.push((k.clone(), s.clone())),
                    other => {
                        return Err(bad(format!(
                            "metadata '{k}' is {}, not a string",
                            other.kind()
                        )))
                    }
                }
            }
            continue;
        }
        entries.push(parse_entry(name, v, data.len(), limits)?);
    }
    // The byte ranges must tile the data section: no overlap, no hole.
    let mut order: Vec<&Entry> = entries.iter().collect();
    order.sort_by_key(|e| (e.begin, e.end));
    let mut cursor = 0usize;
    let mut prev = "the start of the data";
    for e in &order {
        if e.begin < cursor {
            return Err(bad(format!("tensors '{prev}' and '{}' overlap", e.name)));
        }
        if e.begin > cursor {
            return Err(bad(format!(
                "bytes {cursor}..{} after '{prev}' belong to no tensor",
                e.begin
            )));
        }
        cursor = e.end;
        prev = &e.name;
    }
    if cursor != data.len() {
        return Err(bad(format!(
            "{} trailing data bytes belong to no tensor",
            data.len() - cursor
        )));
    }
    for e in entries {
        let raw = &data[e.begin..e.end];
        let t = match e.dtype {
            FileDType::F32 => AnyTensor::F32(decode(raw, &e.shape)?),
            FileDType::F64 => AnyTensor::F64(decode(raw, &e.shape)?),
            dtype => AnyTensor::Other(RawTensor {
                dtype,
                shape: e.shape,
                bytes: raw.to_vec(),
            }),
        };
        ckpt.tensors.push((e.name, t));
    }
    Ok(ckpt)
}

/// Writes a checkpoint atomically (see [`write_atomic`]).
pub fn save(path: impl AsRef<Path>, ckpt: &Checkpoint) -> Result<()> {
    write_atomic(path.as_ref(), &to_bytes(ckpt)?)
}

/// Writes `bytes` to `path` atomically: a temporary file next to it (named by process
/// and call, created exclusively), synced, renamed over it, then the directory
/// synced, so a crash leaves either the old file or the new one and concurrent
/// saves of one path each land whole. A kill between create and rename can still
/// leave a `.NAME.tmp-*` file behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path.file_name().ok_or_else(|| {
        Error::value(
            "write_atomic",
            format!("'{}' is not a file path", path.display()),
        )
    })?;
    // A temp name unique to this process and this call (threads saving the same path
    // do not share one), created exclusively.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_file_name(format!(
        ".{}.tmp-{}-{call}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let io = |e: std::io::Error| Error::io(tmp.display().to_string(), &e);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path.display().to_string(), &e))?;
        // Make the rename itself durable: fsync the directory (where the platform
        // lets a directory be opened; elsewhere the rename is as durable as it gets).
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    } else {
        sweep_stale_temps(path, &name.to_string_lossy());
    }
    result
}

/// Removes the temp files of saves of `path` that a killed process left behind:
/// names `.<name>.tmp-<pid>-<n>` whose process no longer exists. Liveness is read
/// from `/proc`, so the sweep runs only where `/proc/self` exists (Linux); elsewhere
/// such files stay. A save in flight under a reused pid keeps its file.
fn sweep_stale_temps(path: &Path, name: &str) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let prefix = format!(".{name}.tmp-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().to_string();
        let Some(rest) = file.strip_prefix(&prefix) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !proc.join(pid.to_string()).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Reads a checkpoint file.
pub fn load(path: impl AsRef<Path>, limits: &Limits) -> Result<Checkpoint> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| Error::io(path.display().to_string(), &e))?;
    from_bytes(&bytes, limits).map_err(|e| match e {
        Error::Format { detail, .. } => Error::format(path.display().to_string(), detail),
        other => other,
    })
}
