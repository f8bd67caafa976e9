"""JAX peer of `benches/benches/training_step.rs`: the same MLP 784-512-512-10
training step (batch 128, f32, 8 random batches cycled, cross-entropy, Adam with
PyTorch's defaults), jit-compiled on the CPU and timed as the median of repeated
steps after warm-up. XLA's thread count is fixed when the process starts, so each
count is its own run. Not part of the test suite.

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install "jax[cpu]"
    taskset -c 0 /tmp/peer/bin/python benches/peers/jax_mlp_step.py 1
    taskset -c 0,1 /tmp/peer/bin/python benches/peers/jax_mlp_step.py 2
"""
import os
import sys

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
os.environ["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                           f"intra_op_parallelism_threads={threads}")

import statistics  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

sizes = [784, 512, 512, 10]
key = jax.random.PRNGKey(0)
params = []
for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
    k1, k2, key = jax.random.split(key, 3)
    bound = 1.0 / a ** 0.5
    params.append((jax.random.uniform(k1, (a, b), jnp.float32, -bound, bound),
                   jax.random.uniform(k2, (b,), jnp.float32, -bound, bound)))
batches = [jax.random.normal(k, (128, 784), jnp.float32) for k in jax.random.split(key, 8)]
y = jnp.arange(128) % 10


def loss_fn(params, x):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i + 1 < len(params):
            h = jax.nn.relu(h)
    logp = jax.nn.log_softmax(h)
    return -jnp.mean(logp[jnp.arange(128), y])


@jax.jit
def step(params, m, v, t, x):
    loss, g = jax.value_and_grad(loss_fn)(params, x)
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    params = jax.tree_util.tree_map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
    return params, m, v, loss


m = jax.tree_util.tree_map(jnp.zeros_like, params)
v = jax.tree_util.tree_map(jnp.zeros_like, params)
for t in range(1, 51):
    params, m, v, loss = step(params, m, v, float(t), batches[t % 8])
loss.block_until_ready()
times = []
for t in range(51, 351):
    s = time.perf_counter()
    params, m, v, loss = step(params, m, v, float(t), batches[t % 8])
    loss.block_until_ready()
    times.append(time.perf_counter() - s)
print(f"jax {jax.__version__}, {threads} thread(s): median MLP step "
      f"{statistics.median(times) * 1e3:.3f} ms over {len(times)} steps")
