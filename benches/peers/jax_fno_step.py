"""JAX peer of `benches/fno.rs` (`fno1d_fwd_bwd_f32`): the same 1-D FNO (width 64, 16
modes, 4 Fourier layers, head 64 → 128 → 1, exact GELU, grid channel), forward and
backward of the mean squared loss on a batch of 20 functions at s = 1024, f32, with
the spectral convolution written the reference way (rfft, keep 16 modes, complex
einsum, irfft). jit-compiled on the CPU; prints the median over repeated calls
after warm-up.

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install "jax[cpu]"
    taskset -c 0,1 /tmp/peer/bin/python benches/peers/jax_fno_step.py
"""
import statistics
import time

import jax
import jax.numpy as jnp

B, S, W, M, L, P = 20, 1024, 64, 16, 4, 128
key = jax.random.PRNGKey(0)


def uniform(key, shape, bound):
    return jax.random.uniform(key, shape, jnp.float32, -bound, bound)


keys = iter(jax.random.split(key, 64))
params = {
    "lift": (uniform(next(keys), (2, W), 2 ** -0.5), uniform(next(keys), (W,), 2 ** -0.5)),
    "blocks": [
        {
            "wr": jax.random.uniform(next(keys), (W, W, M), jnp.float32) / (W * W),
            "wi": jax.random.uniform(next(keys), (W, W, M), jnp.float32) / (W * W),
            "pw": (uniform(next(keys), (W, W), W ** -0.5), uniform(next(keys), (W,), W ** -0.5)),
        }
        for _ in range(L)
    ],
    "fc1": (uniform(next(keys), (W, P), W ** -0.5), uniform(next(keys), (P,), W ** -0.5)),
    "fc2": (uniform(next(keys), (P, 1), P ** -0.5), uniform(next(keys), (1,), P ** -0.5)),
}
x = jax.random.normal(next(keys), (B, S, 1), jnp.float32)
y = jax.random.normal(next(keys), (B, S, 1), jnp.float32)
grid = jnp.broadcast_to(jnp.linspace(0.0, 1.0, S, dtype=jnp.float32)[None, :, None], (B, S, 1))


def spectral(h, wr, wi):
    # h: [B, S, C] → rfft over S, keep M modes, mix channels per mode, irfft.
    hf = jnp.fft.rfft(h, axis=1)[:, :M, :]
    w = (wr + 1j * wi).astype(jnp.complex64)
    out = jnp.einsum("bmi,iom->bmo", hf, w)
    full = jnp.zeros((h.shape[0], S // 2 + 1, w.shape[1]), jnp.complex64).at[:, :M, :].set(out)
    return jnp.fft.irfft(full, n=S, axis=1)


def loss_fn(params):
    h = jnp.concatenate([x, grid], axis=-1) @ params["lift"][0] + params["lift"][1]
    for i, blk in enumerate(params["blocks"]):
        h = spectral(h, blk["wr"], blk["wi"]) + h @ blk["pw"][0] + blk["pw"][1]
        if i + 1 < L:
            h = jax.nn.gelu(h, approximate=False)
    h = jax.nn.gelu(h @ params["fc1"][0] + params["fc1"][1], approximate=False)
    out = h @ params["fc2"][0] + params["fc2"][1]
    return jnp.mean((out - y) ** 2)


step = jax.jit(jax.value_and_grad(loss_fn))
for _ in range(5):
    jax.block_until_ready(step(params))
times = []
for _ in range(30):
    t = time.perf_counter()
    jax.block_until_ready(step(params))
    times.append(time.perf_counter() - t)
print(f"jax {jax.__version__} FNO fwd+bwd s={S} width {W} modes {M} layers {L} batch {B}: "
      f"median {statistics.median(times) * 1e3:.2f} ms")
