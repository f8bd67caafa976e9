//! Saving and restoring a whole training state — parameters, optimiser state and
//! random generators — in one safetensors file, so that a resumed run continues
//! bit-identically to one that never stopped.

use crate::optimizer::{Optimizer, OptimizerState};
use nn::checkpoint::{self, AnyTensor, Checkpoint, Limits};
use nn::ParamStore;
use std::path::Path;
use tensor::{Element, Error, Result, Rng};

const OPTIM: &str = "optim.";
const RNG: &str = "rng.";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Builds the checkpoint of a training state: the store's tensors, the optimiser's
/// tensors under "optim.", its scalars and the generators' states in the metadata.
pub fn to_checkpoint<T: Element>(
    store: &ParamStore<T>,
    optimizer: &dyn Optimizer<T>,
    rngs: &[(&str, &Rng)],
    extra: &[(String, String)],
) -> Checkpoint {
    let state = optimizer.state();
    let mut tensors = store.to_tensors();
    tensors.extend(
        state
            .tensors
            .iter()
            .map(|(n, t)| (format!("{OPTIM}{n}"), AnyTensor::from_tensor(t))),
    );
    let mut metadata: Vec<(String, String)> = state
        .scalars
        .iter()
        .map(|(k, v)| (format!("{OPTIM}{k}"), v.clone()))
        .collect();
    metadata.extend(
        rngs.iter()
            .map(|(n, r)| (format!("{RNG}{n}"), hex(&r.state()))),
    );
    metadata.extend(extra.iter().cloned());
    Checkpoint { tensors, metadata }
}

/// Writes a training state atomically (see [`to_checkpoint`]).
///
/// ```
/// use nn::ParamStore;
/// use optim::{training_state, Optimizer, Sgd, SgdConfig};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let w = store.root().param("w", Tensor::from_vec(vec![1.0, 2.0], &[2])?)?;
/// let mut opt = Sgd::new(store.trainable(), SgdConfig::new(0.1).momentum(0.9))?;
/// let loss = || w.var().square()?.sum_all();
/// let mut rng = Rng::new(5);
/// opt.step_closure(&loss)?; // the momentum buffer now holds state
/// let path = std::env::temp_dir().join(format!("optim-doc-{}.safetensors", std::process::id()));
/// training_state::save(&path, &store, &opt, &[("data", &rng)], &[])?;
/// opt.step_closure(&loss)?; // the run that never stopped...
/// let (w_then, draw_then) = (w.value(), rng.next_u64());
/// let mut resumed_rng = Rng::new(0); // ...and one resumed from the file
/// training_state::load(&path, &store, &mut opt, &mut [("data", &mut resumed_rng)])?;
/// # std::fs::remove_file(&path).ok();
/// opt.step_closure(&loss)?;
/// assert!(w.value().bit_eq(&w_then)); // bit-identical
/// assert_eq!(resumed_rng.next_u64(), draw_then);
/// # Ok(())
/// # }
/// ```
pub fn save<T: Element>(
    path: impl AsRef<Path>,
    store: &ParamStore<T>,
    optimizer: &dyn Optimizer<T>,
    rngs: &[(&str, &Rng)],
    extra: &[(String, String)],
) -> Result<()> {
    checkpoint::save(path, &to_checkpoint(store, optimizer, rngs, extra))
}

/// Restores a training state into `store`, `optimizer` and the named generators.
/// Returns the checkpoint for any extra metadata. Everything is validated before the
/// model is touched, and a tensor that is neither a parameter or buffer of `store`
/// nor the optimiser's is refused: a state saved from another model (one more
/// layer, say) does not resume into this one.
pub fn load<T: Element>(
    path: impl AsRef<Path>,
    store: &ParamStore<T>,
    optimizer: &mut dyn Optimizer<T>,
    rngs: &mut [(&str, &mut Rng)],
) -> Result<Checkpoint> {
    let ckpt = checkpoint::load(path, &Limits::default())?;
    let own: std::collections::HashSet<String> =
        store.all().iter().map(|p| p.name().to_string()).collect();
    if let Some((name, _)) = ckpt
        .tensors
        .iter()
        .find(|(n, _)| !n.starts_with(OPTIM) && !own.contains(n))
    {
        return Err(Error::format(
            "training state",
            format!("tensor '{name}' is not a parameter or buffer of this model: the state was saved from another model"),
        ));
    }
    let mut state = OptimizerState::default();
    for (name, t) in &ckpt.tensors {
        if let Some(rest) = name.strip_prefix(OPTIM) {
            state.tensors.push((rest.to_string(), t.to_tensor(name)?));
        }
    }
    for (k, v) in &ckpt.metadata {
        if let Some(rest) = k.strip_prefix(OPTIM) {
            state.scalars.push((rest.to_string(), v.clone()));
        }
    }
    let mut restored = Vec::with_capacity(rngs.len());
    for (name, _) in rngs.iter() {
        let key = format!("{RNG}{name}");
        let bytes = ckpt.meta(&key).and_then(unhex).ok_or_else(|| {
            Error::format(
                "checkpoint",
                format!("generator state '{key}' is missing or malformed"),
            )
        })?;
        restored.push(Rng::from_state(bytes)?);
    }
    let backup = optimizer.state();
    optimizer.load_state(&state)?;
    if let Err(e) = store.load_from(&ckpt) {
        optimizer.load_state(&backup)?;
        return Err(e);
    }
    for ((_, r), new) in rngs.iter_mut().zip(restored) {
        **r = new;
    }
    Ok(ckpt)
}
