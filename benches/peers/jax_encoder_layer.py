"""JAX peer of `benches/benches/transformer.rs`: one post-norm Transformer encoder
layer (d 512, 8 heads, FF 2048, ReLU, sequence 128, batch 8, f32), forward and
forward+backward (gradient of the output sum with respect to the input and every
parameter), jitted, on CPU. Prints the median of 20 timed runs after warm-up.

    python -m pip install "jax[cpu]"
    python benches/peers/jax_encoder_layer.py
"""
import time

import jax
import jax.numpy as jnp

B, L, D, H, F = 8, 128, 512, 8, 2048
key = jax.random.PRNGKey(0)
ks = jax.random.split(key, 8)


def dense(k, i, o):
    return (jax.random.normal(k, (i, o), jnp.float32) / jnp.sqrt(i), jnp.zeros((o,), jnp.float32))


params = {
    "q": dense(ks[0], D, D), "k": dense(ks[1], D, D), "v": dense(ks[2], D, D), "o": dense(ks[3], D, D),
    "up": dense(ks[4], D, F), "down": dense(ks[5], F, D),
    "ln1": (jnp.ones(D), jnp.zeros(D)), "ln2": (jnp.ones(D), jnp.zeros(D)),
}
x = jax.random.normal(ks[6], (B, L, D), jnp.float32)


def ln(p, x):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * p[0] + p[1]


def lin(p, x):
    return x @ p[0] + p[1]


def layer(params, x):
    def heads(t):
        return t.reshape(B, L, H, D // H).transpose(0, 2, 1, 3)

    q, k, v = (heads(lin(params[n], x)) for n in "qkv")
    w = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(D // H), axis=-1)
    a = lin(params["o"], (w @ v).transpose(0, 2, 1, 3).reshape(B, L, D))
    h = ln(params["ln1"], x + a)
    f = lin(params["down"], jax.nn.relu(lin(params["up"], h)))
    return ln(params["ln2"], h + f)


fwd = jax.jit(layer)
bwd = jax.jit(jax.grad(lambda p, x: layer(p, x).sum(), argnums=(0, 1)))


def median_ms(f):
    for _ in range(3):
        jax.block_until_ready(f())
    ts = []
    for _ in range(20):
        t = time.perf_counter()
        jax.block_until_ready(f())
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2] * 1e3


print(f"jax {jax.__version__}: forward {median_ms(lambda: fwd(params, x)):.2f} ms, "
      f"forward+backward {median_ms(lambda: bwd(params, x)):.2f} ms")
