//! The number of threads the kernels may use: a leaf below both the parallel loops
//! ([`crate::parallel`], which re-exports it as [`crate::parallel::threads`]) and
//! the team of threads that runs those loops inside a region (`kernels::team`),
//! so that the team need not import the loops that hand their tasks to it.

/// The number of threads kernels may use (1 without the `parallel` feature).
pub fn threads() -> usize {
    #[cfg(feature = "parallel")]
    {
        rayon::current_num_threads()
    }
    #[cfg(not(feature = "parallel"))]
    {
        1
    }
}
