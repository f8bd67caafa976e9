//! Criterion benchmarks live in `benches/benches/`; this library holds what they
//! share.
#![forbid(unsafe_code)]

/// Times `step` as `<name>_<n>_threads` for each thread count, each inside its own
/// rayon pool of that many workers: a step at 1 and at 2 threads side by side, as
/// the peers' scripts time theirs (`benches/peers/compare.sh`).
pub fn at_thread_counts(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    counts: &[usize],
    mut step: impl FnMut() + Send,
) {
    for &threads in counts {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a rayon pool");
        group.bench_function(format!("{name}_{threads}_threads"), |b| {
            pool.install(|| b.iter(&mut step))
        });
    }
}
