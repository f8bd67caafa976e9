//! The on-disk cache of generated Burgers pairs, so repeated runs skip the solve.
//!
//! Format (little-endian): the magic `BURGERS\0`; version u32 = 1; samples, points,
//! solver points and seed as u64; viscosity, final time and time step as f64; then
//! samples × points f64 values of u₀ and as many of u(T), row-major; then an FNV-1a
//! 64-bit checksum of everything before it. A file is accepted only if its length,
//! magic, version, checksum, header (against the configuration asked for) and values
//! (finite) all check out; otherwise the error names the file and what was wrong.

use super::{generate, BurgersConfig, BurgersData};
use nn::checkpoint::write_atomic;
use std::path::{Path, PathBuf};
use tensor::{Error, Result, Tensor};

const MAGIC: &[u8; 8] = b"BURGERS\0";
const VERSION: u32 = 1;
/// Bytes before the values.
const HEADER: usize = 8 + 4 + 4 * 8 + 3 * 8;

/// The FNV-1a checksum a cache file ends with (public so that a fuzzer can make it
/// valid and reach the checks behind it).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The file bytes of `data`.
pub fn to_bytes(data: &BurgersData) -> Vec<u8> {
    let c = &data.config;
    let mut out = Vec::with_capacity(HEADER + 16 * c.samples * c.points + 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    for v in [c.samples, c.points, c.solver_points] {
        out.extend_from_slice(&(v as u64).to_le_bytes());
    }
    out.extend_from_slice(&c.seed.to_le_bytes());
    for v in [c.viscosity, c.horizon, c.dt] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for t in [&data.initial, &data.fin] {
        for v in t.to_vec() {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Parses cache bytes (`what` names the source in errors).
pub fn from_bytes(bytes: &[u8], what: &str) -> Result<BurgersData> {
    let bad = |detail: String| Error::format("Burgers cache", format!("{what}: {detail}"));
    if bytes.len() < HEADER + 8 {
        return Err(bad(format!(
            "{} bytes is shorter than the header",
            bytes.len()
        )));
    }
    if &bytes[..8] != MAGIC {
        return Err(bad("not a Burgers cache (bad magic)".into()));
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let f64_at = |at: usize| f64::from_bits(u64_at(at));
    let version = u32_at(8);
    if version != VERSION {
        return Err(bad(format!("version {version}, expected {VERSION}")));
    }
    let (samples, points, solver_points, seed) = (u64_at(12), u64_at(20), u64_at(28), u64_at(36));
    let values = samples
        .checked_mul(points)
        .and_then(|n| n.checked_mul(16))
        .and_then(|n| n.checked_add((HEADER + 8) as u64));
    if values != Some(bytes.len() as u64) {
        return Err(bad(format!(
            "{} bytes do not hold {samples} × {points} pairs",
            bytes.len()
        )));
    }
    let body = bytes.len() - 8;
    if fnv1a(&bytes[..body]) != u64_at(body) {
        return Err(bad("checksum mismatch (the file is damaged)".into()));
    }
    let (samples, points) = (samples as usize, points as usize);
    let config = BurgersConfig {
        samples,
        points,
        solver_points: solver_points as usize,
        seed,
        viscosity: f64_at(44),
        horizon: f64_at(52),
        dt: f64_at(60),
    };
    config
        .validate()
        .map_err(|e| bad(format!("invalid header: {e}")))?;
    let n = samples * points;
    let read = |start: usize| -> Result<Tensor<f64>> {
        let v: Vec<f64> = (0..n).map(|i| f64_at(start + 8 * i)).collect();
        if v.iter().any(|x| !x.is_finite()) {
            return Err(bad("a value is NaN or infinite".into()));
        }
        Tensor::from_vec(v, &[samples, points])
    };
    Ok(BurgersData {
        initial: read(HEADER)?,
        fin: read(HEADER + 8 * n)?,
        config,
    })
}

/// The cache file for `cfg` in `dir`.
pub fn path_for(cfg: &BurgersConfig, dir: &Path) -> PathBuf {
    dir.join(format!(
        "burgers-n{}-s{}-nu{}-T{}-N{}-dt{}-seed{}.bin",
        cfg.samples, cfg.points, cfg.viscosity, cfg.horizon, cfg.solver_points, cfg.dt, cfg.seed
    ))
}

/// Where the data came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Read from the cache.
    Cache,
    /// Generated (and written to the cache).
    Generated,
}

/// The pairs for `cfg`: read from `dir` if cached there, else generated and cached. A
/// damaged or mismatching cache file is an error naming it (delete it to regenerate).
pub fn load_or_generate(cfg: &BurgersConfig, dir: &Path) -> Result<(BurgersData, Source)> {
    let path = path_for(cfg, dir);
    let name = path.display().to_string();
    match std::fs::read(&path) {
        Ok(bytes) => {
            let data = from_bytes(&bytes, &name)?;
            if data.config != *cfg {
                return Err(Error::format(
                    "Burgers cache",
                    format!(
                        "{name}: holds {:?}, not the requested {cfg:?}; delete it to regenerate",
                        data.config
                    ),
                ));
            }
            Ok((data, Source::Cache))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let data = generate(cfg)?;
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display().to_string(), &e))?;
            write_atomic(&path, &to_bytes(&data))?;
            Ok((data, Source::Generated))
        }
        Err(e) => Err(Error::io(name, &e)),
    }
}
