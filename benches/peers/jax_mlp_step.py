"""JAX peer of `benches/training_step.rs`: the same MLP 784-512-512-10 training step
(batch 128, f32, cross-entropy, Adam with PyTorch's defaults), jit-compiled on the
CPU and timed as the median of repeated steps after warm-up. Not part of the test
suite; PyTorch's CPU wheels are not reachable from this machine, so JAX is the peer.

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install "jax[cpu]"
    taskset -c 0,1 /tmp/peer/bin/python benches/peers/jax_mlp_step.py
"""
import statistics
import time

import jax
import jax.numpy as jnp

sizes = [784, 512, 512, 10]
key = jax.random.PRNGKey(0)
params = []
for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
    k1, k2, key = jax.random.split(key, 3)
    bound = 1.0 / a ** 0.5
    params.append((jax.random.uniform(k1, (a, b), jnp.float32, -bound, bound),
                   jax.random.uniform(k2, (b,), jnp.float32, -bound, bound)))
x = jax.random.normal(key, (128, 784), jnp.float32)
y = jnp.arange(128) % 10


def loss_fn(params):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i + 1 < len(params):
            h = jax.nn.relu(h)
    logp = jax.nn.log_softmax(h)
    return -jnp.mean(logp[jnp.arange(128), y])


@jax.jit
def step(params, m, v, t):
    loss, g = jax.value_and_grad(loss_fn)(params)
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    params = jax.tree_util.tree_map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
    return params, m, v, loss


m = jax.tree_util.tree_map(jnp.zeros_like, params)
v = jax.tree_util.tree_map(jnp.zeros_like, params)
for t in range(1, 51):
    params, m, v, loss = step(params, m, v, float(t))
loss.block_until_ready()
times = []
for t in range(51, 351):
    s = time.perf_counter()
    params, m, v, loss = step(params, m, v, float(t))
    loss.block_until_ready()
    times.append(time.perf_counter() - s)
print(f"jax {jax.__version__}: median step {statistics.median(times) * 1e3:.3f} ms over {len(times)} steps")
