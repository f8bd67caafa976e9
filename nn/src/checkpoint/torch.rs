//! Loading other frameworks' state dicts (PyTorch's above all): parameters found
//! under the file's own key names (a rename by table or function, with the common
//! cases built in), tensors of other types converted only when the conversion is
//! exact, and a report of what was loaded from where and what the file held that
//! the model does not use.

use super::{AnyTensor, Checkpoint};
use crate::param::ParamStore;
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

/// Whether a tensor of another type may become a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Convert {
    /// The file's type must be the parameter's.
    Never,
    /// Value-preserving conversions only: F16/BF16 to F32/F64, F32 to F64, and F64,
    /// integers and booleans to a float type when every value is exactly
    /// representable there; anything that would round is an error naming the
    /// value.
    Exact,
}

/// Which key of the file each parameter of the model reads.
pub enum KeyMap {
    /// The parameter's own name.
    Same,
    /// `(parameter, key)` pairs; names not listed read their own name.
    Table(Vec<(String, String)>),
    /// Any renaming.
    Function(Box<dyn Fn(&str) -> String>),
}

impl KeyMap {
    /// The key parameter `name` reads.
    pub fn key(&self, name: &str) -> String {
        match self {
            KeyMap::Same => name.to_string(),
            KeyMap::Table(pairs) => pairs
                .iter()
                .find(|(p, _)| p == name)
                .map_or_else(|| name.to_string(), |(_, k)| k.clone()),
            KeyMap::Function(f) => f(name),
        }
    }

    /// A `torch.nn.Sequential` whose layers with parameters sit every `stride`
    /// modules (Linear, activation, Linear, …: stride 2), as [`crate::Mlp`] under
    /// `prefix` numbers them 0, 1, 2, …: our `{prefix}{k}.rest` reads
    /// `{prefix}{stride·k}.rest`. Other names read their own.
    ///
    /// ```
    /// use nn::checkpoint::torch::KeyMap;
    /// // torch.nn.Sequential(Conv, BatchNorm, ReLU, Conv, …): layers with parameters every 3.
    /// let keys = KeyMap::sequential("features.", 3);
    /// assert_eq!(keys.key("features.1.weight"), "features.3.weight");
    /// assert_eq!(keys.key("head.bias"), "head.bias"); // outside the prefix: unchanged
    /// ```
    pub fn sequential(prefix: &str, stride: usize) -> KeyMap {
        let prefix = prefix.to_string();
        KeyMap::Function(Box::new(move |name: &str| {
            let renamed = name.strip_prefix(prefix.as_str()).and_then(|rest| {
                let (index, tail) = rest.split_once('.')?;
                let k: usize = index.parse().ok()?;
                Some(format!("{prefix}{}.{tail}", k * stride))
            });
            renamed.unwrap_or_else(|| name.to_string())
        }))
    }
}

/// One parameter set from the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The model's name.
    pub param: String,
    /// The file's key.
    pub key: String,
    /// The file's type when it was converted (`Some("F16")`), else `None`.
    pub converted_from: Option<&'static str>,
}

/// A tensor of the file that no parameter read.
#[derive(Clone, Debug, PartialEq)]
pub struct Unused {
    /// The file's key.
    pub key: String,
    /// Its type.
    pub dtype: &'static str,
    /// Its shape.
    pub shape: Vec<usize>,
}

/// What a mapped load did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadReport {
    /// Every parameter and buffer of the model, with its source.
    pub loaded: Vec<Loaded>,
    /// The file's tensors that the model does not use (PyTorch's
    /// `num_batches_tracked`, say), skipped.
    pub unused: Vec<Unused>,
}

impl LoadReport {
    /// One line per renamed or converted parameter and per unused tensor.
    pub fn render(&self) -> String {
        let mut s = format!(
            "{} parameters loaded, {} tensors of the file unused\n",
            self.loaded.len(),
            self.unused.len()
        );
        for l in &self.loaded {
            if l.key != l.param || l.converted_from.is_some() {
                s.push_str(&format!("  {} ← {}", l.param, l.key));
                if let Some(from) = l.converted_from {
                    s.push_str(&format!(" (converted from {from})"));
                }
                s.push('\n');
            }
        }
        for u in &self.unused {
            s.push_str(&format!(
                "  unused: {} ({} {})\n",
                u.key,
                u.dtype,
                fmt_shape(&u.shape)
            ));
        }
        s
    }
}

impl<T: Element> ParamStore<T> {
    /// Sets every parameter and buffer from the file tensor `keys` names for it,
    /// converting other types as `convert` allows. Everything is checked (presence,
    /// type, shape, exactness of a conversion) before anything is assigned, so a
    /// failed load leaves the model untouched; the error names the parameter and
    /// the key. The report lists each parameter's source and the file's tensors the
    /// model did not use.
    ///
    /// ```
    /// use nn::checkpoint::torch::{Convert, KeyMap};
    /// use nn::checkpoint::{AnyTensor, Checkpoint, FileDType, RawTensor};
    /// use nn::{Activation, Mlp, ParamStore};
    /// use tensor::{Rng, Tensor};
    /// # fn main() -> tensor::Result<()> {
    /// // torch's Sequential(Linear(2, 3), ReLU(), Linear(3, 1)) saved in F64, and an I64 counter.
    /// let t = |s: &[usize], v: f64| Tensor::full(s, v).map(AnyTensor::F64);
    /// let steps = RawTensor { dtype: FileDType::I64, shape: vec![], bytes: 7i64.to_le_bytes().to_vec() };
    /// let tensors = vec![
    ///     ("net.0.weight".into(), t(&[3, 2], 0.5)?), ("net.0.bias".into(), t(&[3], 0.25)?),
    ///     ("net.2.weight".into(), t(&[1, 3], -1.0)?), ("net.2.bias".into(), t(&[1], 2.0)?),
    ///     ("steps".into(), AnyTensor::Other(steps)),
    /// ];
    /// let file = Checkpoint { tensors, metadata: vec![] };
    /// let store = ParamStore::<f32>::new();
    /// let mlp = Mlp::new(&store.root().sub("net"), &[2, 3, 1], Activation::Relu, &mut Rng::new(0))?;
    /// // Our layer 1 is the file's module 2; F64 → F32 only where every value is exact.
    /// let keys = KeyMap::sequential("net.", 2);
    /// assert!(store.load_mapped(&file, &keys, Convert::Never).is_err()); // F64 into f32
    /// let report = store.load_mapped(&file, &keys, Convert::Exact)?;
    /// assert_eq!((report.loaded[2].key.as_str(), report.loaded[2].converted_from), ("net.2.weight", Some("F64")));
    /// assert_eq!((report.unused[0].key.as_str(), mlp.layers()[1].weight.value().to_vec()), ("steps", vec![-1.0; 3]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn load_mapped(
        &self,
        ckpt: &Checkpoint,
        keys: &KeyMap,
        convert: Convert,
    ) -> Result<LoadReport> {
        let params = self.all();
        let mut values = Vec::with_capacity(params.len());
        let mut report = LoadReport::default();
        for p in &params {
            let key = keys.key(p.name());
            // "tensor 'x'" when the parameter reads its own name, else "'x' reads 'y'".
            let which = if key == p.name() {
                format!("tensor '{key}'")
            } else {
                format!("'{}' reads '{key}', which", p.name())
            };
            let stored = ckpt.get(&key).ok_or_else(|| {
                Error::format("checkpoint", format!("{which} is missing from the file"))
            })?;
            let (t, converted_from) = match convert {
                Convert::Never => (stored.to_tensor::<T>(&key)?, None),
                Convert::Exact => stored.to_tensor_exact::<T>(&key)?,
            };
            if t.shape() != p.shape().as_slice() {
                return Err(Error::format(
                    "checkpoint",
                    format!(
                        "{which} has shape {}, the model expects {}",
                        fmt_shape(t.shape()),
                        fmt_shape(&p.shape())
                    ),
                ));
            }
            values.push(t);
            report.loaded.push(Loaded {
                param: p.name().to_string(),
                key,
                converted_from,
            });
        }
        for (key, t) in &ckpt.tensors {
            if !report.loaded.iter().any(|l| &l.key == key) {
                report.unused.push(Unused {
                    key: key.clone(),
                    dtype: t.dtype().name(),
                    shape: t.shape().to_vec(),
                });
            }
        }
        for (p, v) in params.iter().zip(values) {
            p.set(v)?;
        }
        Ok(report)
    }
}

/// PyTorch's `nn.MultiheadAttention` packs the query, key and value projections
/// into `in_proj_weight` `[3d, d]` and `in_proj_bias` `[3d]` (rows in that order)
/// and calls the output projection `out_proj`; [`crate::MultiHeadAttention`] keeps
/// `q`, `k`, `v` and `out`. Returns the checkpoint with `{torch}in_proj_*` split
/// into `{ours}q.*`, `{ours}k.*`, `{ours}v.*` and `{torch}out_proj.*` renamed
/// `{ours}out.*` (other tensors kept). Prefixes include their trailing dot.
pub fn split_in_proj(ckpt: &Checkpoint, torch: &str, ours: &str) -> Result<Checkpoint> {
    let mut out = Checkpoint {
        tensors: Vec::with_capacity(ckpt.tensors.len() + 4),
        metadata: ckpt.metadata.clone(),
    };
    let packed = |suffix: &str| format!("{torch}in_proj_{suffix}");
    for (key, t) in &ckpt.tensors {
        let suffix = ["weight", "bias"].into_iter().find(|s| *key == packed(s));
        if let Some(suffix) = suffix {
            let rows = t.shape().first().copied().unwrap_or(0);
            if rows == 0 || rows % 3 != 0 {
                return Err(Error::format(
                    "checkpoint",
                    format!(
                        "'{key}' has shape {}: its first axis must be 3 × the embedding",
                        fmt_shape(t.shape())
                    ),
                ));
            }
            let d = rows / 3;
            for (i, name) in ["q", "k", "v"].into_iter().enumerate() {
                let part = match t {
                    AnyTensor::F32(x) => AnyTensor::F32(x.narrow(0, i * d, d)?.contiguous()),
                    AnyTensor::F64(x) => AnyTensor::F64(x.narrow(0, i * d, d)?.contiguous()),
                    AnyTensor::Other(raw) => AnyTensor::Other(raw.rows(i * d, d)?),
                };
                out.tensors.push((format!("{ours}{name}.{suffix}"), part));
            }
        } else if let Some(rest) = key.strip_prefix(&format!("{torch}out_proj.")) {
            out.tensors.push((format!("{ours}out.{rest}"), t.clone()));
        } else {
            out.tensors.push((key.clone(), t.clone()));
        }
    }
    Ok(out)
}

/// The value of an IEEE half (binary16), exactly.
pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// The value of a bfloat16 (the top half of an f32), exactly.
pub fn bf16_to_f64(b: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(b) << 16))
}

/// `values` as a tensor of `T` when every one is exactly representable, else an
/// error naming the tensor and the first value that is not.
pub(super) fn exact_tensor<T: Element>(
    name: &str,
    from: &'static str,
    values: Vec<f64>,
    shape: &[usize],
) -> Result<Tensor<T>> {
    let mut out = Vec::with_capacity(values.len());
    for (i, v) in values.into_iter().enumerate() {
        let t = T::from_f64(v);
        if t.as_f64() != v && !(v.is_nan() && t.as_f64().is_nan()) {
            return Err(Error::format(
                "checkpoint",
                format!(
                    "tensor '{name}' ({from}) holds {v} at element {i}, which {} cannot represent exactly",
                    T::DTYPE.name()
                ),
            ));
        }
        out.push(t);
    }
    Tensor::from_vec(out, shape)
}
