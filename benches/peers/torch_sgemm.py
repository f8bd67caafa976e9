"""PyTorch peer of the `matmul_f32` group of `benches/benches/tensor_ops.rs`: the
product of two random 1024 × 1024 f32 matrices (`torch.matmul`, its CPU BLAS), and
NumPy's (`numpy.matmul`, its OpenBLAS), at each thread count given. Prints the
median time and the rate in GFLOP/s (2n³ flops).

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install torch numpy
    taskset -c 0,1 /tmp/peer/bin/python benches/peers/torch_sgemm.py 1 2
"""
import os
import statistics
import sys
import time

import numpy as np
import torch

N = 1024
torch.manual_seed(0)
a, b = torch.randn(N, N), torch.randn(N, N)
an, bn = a.numpy(), b.numpy()


def median_ms(f, reps=60):
    for _ in range(10):
        f()
    times = []
    for _ in range(reps):
        s = time.perf_counter()
        f()
        times.append(time.perf_counter() - s)
    return statistics.median(times) * 1e3


for threads in [int(a) for a in sys.argv[1:]] or [1, 2]:
    torch.set_num_threads(threads)
    ms = median_ms(lambda: torch.matmul(a, b))
    print(f"sgemm {N} torch {threads} thread(s): median {ms:.3f} ms over 60 steps, {2 * N**3 / ms / 1e6:.0f} GFLOP/s")
    try:
        from threadpoolctl import threadpool_limits
        with threadpool_limits(threads):
            ms = median_ms(lambda: np.matmul(an, bn))
        print(f"sgemm {N} numpy {threads} thread(s): median {ms:.3f} ms over 60 steps, {2 * N**3 / ms / 1e6:.0f} GFLOP/s")
    except ImportError:
        pass
