"""NumPy (LAPACK through its bundled OpenBLAS) peer of the `linalg_f64` group of
`benches/benches/linalg_fft.rs`: Cholesky, reduced QR (Q and R) and the symmetric
eigendecomposition (values and vectors) of the same kind of f64 matrix, an SPD
M Mᵀ/n + I of size n. Prints the median time of each at each size given, on the
threads OpenBLAS starts with (set OPENBLAS_NUM_THREADS to change them).

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install numpy
    taskset -c 0,1 /tmp/peer/bin/python benches/peers/numpy_linalg.py 512
"""
import statistics
import sys
import time

import numpy as np


def median_ms(f, samples=11):
    f()
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


for n in [int(a) for a in sys.argv[1:]] or [512]:
    m = np.random.default_rng(n).standard_normal((n, n))
    a = m @ m.T / n + np.eye(n)
    for name, f in [
        ("cholesky", lambda: np.linalg.cholesky(a)),
        ("qr", lambda: np.linalg.qr(a)),
        ("eigh", lambda: np.linalg.eigh(a)),
    ]:
        print(f"{name} {n}: median {median_ms(f):.3f} ms over 11 samples")
