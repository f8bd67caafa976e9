//! The Burgers generator: the solver against the Cole–Hopf solution, its fourth-order
//! convergence in time, conservation of the mean, the exact energy balance, the random
//! field's variance, the sampling grids, and the cache (round trip and damage).

use models::data::burgers::cache::{self, Source};
use models::data::burgers::solver::{Solver, Spectrum};
use models::data::burgers::{
    convergence_check, field_std, generate, random_field, sample, BurgersConfig,
};
use std::f64::consts::PI;
use tensor::{Rng, Tensor};

/// Cole–Hopf: with φ_t = νφ_xx, u = −2νφ_x/φ solves Burgers. φ = a + Σ b_m e^{−ν(2πm)²t}
/// cos(2πmx + c_m) with a > Σ|b_m| stays positive.
fn cole_hopf(nu: f64, t: f64, points: usize) -> Tensor<f64> {
    let (a, terms) = (2.0, [(1usize, 0.9, 0.3), (2, 0.5, 1.1), (3, 0.3, -0.7)]);
    let v: Vec<f64> = (0..points)
        .map(|j| {
            let x = j as f64 / points as f64;
            let (mut phi, mut phi_x) = (a, 0.0);
            for &(m, b, c) in &terms {
                let w = 2.0 * PI * m as f64;
                let decay = (-nu * w * w * t).exp();
                phi += b * decay * (w * x + c).cos();
                phi_x -= b * decay * w * (w * x + c).sin();
            }
            -2.0 * nu * phi_x / phi
        })
        .collect();
    Tensor::from_vec(v, &[1, points]).unwrap()
}

fn max_error(a: &Tensor<f64>, b: &Tensor<f64>) -> f64 {
    a.to_vec()
        .iter()
        .zip(b.to_vec())
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
}

fn solve(u0: &Tensor<f64>, nu: f64, dt: f64, steps: usize) -> Tensor<f64> {
    let n = u0.shape()[1];
    let solver = Solver::new(n, nu, dt).unwrap();
    let v = Spectrum::from_values(u0).unwrap();
    solver.run(&v, steps, |_, _| {}).unwrap().values(n).unwrap()
}

#[test]
fn the_solver_matches_the_cole_hopf_solution() {
    // ν = 0.1, T = 1, dt = 1e-3 on 256 points: the generator's setting. The solution is
    // analytic, so the spatial error is at round-off and the fourth-order time error
    // is ~1e-13; 1e-10 leaves room for the rounding of 1000 steps.
    let u = solve(&cole_hopf(0.1, 0.0, 256), 0.1, 1e-3, 1000);
    let err = max_error(&u, &cole_hopf(0.1, 1.0, 256));
    assert!(err < 1e-10, "max error {err:e}");
    // A sharper, less viscous case at a shorter time.
    let u = solve(&cole_hopf(0.02, 0.0, 256), 0.02, 1e-3, 500);
    let err = max_error(&u, &cole_hopf(0.02, 0.5, 256));
    assert!(err < 1e-9, "ν 0.02: max error {err:e}");
}

#[test]
fn the_time_error_falls_sixteenfold_when_the_step_halves() {
    let (nu, t) = (0.02, 0.4);
    let exact = cole_hopf(nu, t, 256);
    let errors: Vec<f64> = [0.04, 0.02, 0.01]
        .iter()
        .map(|&dt| {
            max_error(
                &solve(&cole_hopf(nu, 0.0, 256), nu, dt, (t / dt) as usize),
                &exact,
            )
        })
        .collect();
    for w in errors.windows(2) {
        let order = (w[0] / w[1]).log2();
        assert!(
            (3.6..4.4).contains(&order),
            "errors {errors:?}: observed order {order}"
        );
    }
}

#[test]
fn the_mean_is_conserved_and_energy_follows_its_exact_balance() {
    let n = 128;
    let mut v = random_field(3, n, &mut Rng::new(5)).unwrap();
    // Give each solution a different non-zero mean.
    let bins = v.bins();
    for r in 0..3 {
        v.re[r * bins] = (0.2 + 0.3 * r as f64) * n as f64;
    }
    let dt = 1e-3;
    let solver = Solver::new(n, 0.1, dt).unwrap();
    let mut previous = v.energy_and_dissipation();
    let start = v.means();
    let mut worst: f64 = 0.0;
    let end = solver
        .run(&v, 300, |step, s| {
            let now = s.energy_and_dissipation();
            for ((e1, d1), (e0, d0)) in now.iter().zip(&previous) {
                // dE/dt = −ν∫u_x²: the trapezoid rule over one step is O(dt²) accurate.
                let rate = (e1 - e0) / dt;
                let balance = -0.1 * 0.5 * (d0 + d1);
                assert!(e1 <= e0, "energy grew");
                // Once the stiff modes (e^{−ν(2πk)²dt} ≈ e^{−7} per step at k = 42) have
                // died out, so that D varies smoothly across a step.
                if step > 50 {
                    worst = worst.max((rate - balance).abs() / balance.abs());
                }
            }
            previous = now;
        })
        .unwrap();
    assert!(worst < 1e-4, "energy balance off by {worst:e} (relative)");
    for (a, b) in start.iter().zip(end.means()) {
        assert!((a - b).abs() < 1e-13, "mean {a} → {b}");
    }
}

#[test]
fn the_random_field_has_the_stated_variance() {
    // Var u₀(x) = Σ_{k=1}^{N/3} 2σ_k²; pooled over 4000 fields × 32 points.
    let n = 96;
    let u = sample(&random_field(4000, n, &mut Rng::new(11)).unwrap(), 32).unwrap();
    let v = u.to_vec();
    let var = v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64;
    let want: f64 = (1..=n / 3).map(|k| 2.0 * field_std(k).powi(2)).sum();
    assert!((var / want - 1.0).abs() < 0.06, "variance {var} vs {want}");
    // No mean mode: every field averages to zero over the full grid (not over a
    // subsampled one, where mode 32 aliases onto the mean).
    let full = sample(&random_field(10, n, &mut Rng::new(12)).unwrap(), n).unwrap();
    let means = full.mean(&[1], false).unwrap().to_vec();
    assert!(means.iter().all(|m| m.abs() < 1e-12));
}

#[test]
fn sampling_grids_agree() {
    let v = random_field(2, 64, &mut Rng::new(3)).unwrap();
    let fine = sample(&v, 256).unwrap();
    let coarse = sample(&v, 16).unwrap();
    let every_16th: Vec<f64> = fine
        .to_vec()
        .chunks(256)
        .flat_map(|row| row.iter().step_by(16).copied().collect::<Vec<_>>())
        .collect();
    let c = coarse.to_vec();
    assert!(every_16th
        .iter()
        .zip(&c)
        .all(|(a, b)| (a - b).abs() < 1e-12));
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("burgers-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn generation_is_seeded_and_the_cache_round_trips_and_refuses_damage() {
    let mut cfg = BurgersConfig::new(5, 32, 7);
    cfg.solver_points = 64;
    cfg.dt = 0.01;
    let dir = tmpdir("cache");
    let (a, src) = cache::load_or_generate(&cfg, &dir).unwrap();
    assert_eq!(src, Source::Generated);
    let (b, src) = cache::load_or_generate(&cfg, &dir).unwrap();
    assert_eq!(src, Source::Cache);
    assert_eq!(a.initial.to_vec(), b.initial.to_vec());
    assert_eq!(a.fin.to_vec(), b.fin.to_vec());
    assert_eq!(a.fin.to_vec(), generate(&cfg).unwrap().fin.to_vec());
    // Viscosity smooths: u(T) has less energy than u₀ in every sample.
    let energy = |t: &Tensor<f64>| t.square().sum(&[1], false).unwrap().to_vec();
    assert!(energy(&a.fin)
        .iter()
        .zip(energy(&a.initial))
        .all(|(f, i)| *f < i));

    let path = cache::path_for(&cfg, &dir);
    let good = std::fs::read(&path).unwrap();
    let mut flipped = good.clone();
    flipped[100] ^= 1;
    let e = cache::from_bytes(&flipped, "x").unwrap_err().to_string();
    assert!(e.contains("checksum"), "{e}");
    let e = cache::from_bytes(&good[..good.len() - 9], "x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("do not hold"), "{e}");
    let mut magic = good.clone();
    magic[0] = b'X';
    assert!(cache::from_bytes(&magic, "x").is_err());
    assert!(cache::from_bytes(&good[..10], "x").is_err());
    // A damaged file in place is an error naming it, not silently regenerated.
    std::fs::write(&path, &flipped).unwrap();
    let e = cache::load_or_generate(&cfg, &dir).unwrap_err().to_string();
    assert!(e.contains(&path.display().to_string()), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_settings_are_refused() {
    let ok = BurgersConfig::new(4, 64, 0);
    assert!(ok.validate().is_ok());
    let cases = [
        BurgersConfig {
            samples: 0,
            ..ok.clone()
        },
        BurgersConfig {
            points: 100,
            ..ok.clone()
        },
        BurgersConfig {
            viscosity: f64::NAN,
            ..ok.clone()
        },
        BurgersConfig {
            viscosity: -0.1,
            ..ok.clone()
        },
        BurgersConfig {
            dt: 0.3,
            ..ok.clone()
        },
        BurgersConfig {
            horizon: 0.0,
            ..ok.clone()
        },
        BurgersConfig {
            solver_points: 63,
            ..ok.clone()
        },
    ];
    for c in cases {
        assert!(c.validate().is_err(), "{c:?} accepted");
    }
    // Sampling a 512-point solver at 100 points would not be point values.
    assert!(Solver::new(6, 0.1, 1e-3).is_err());
}

/// The convergence check is tiny where the solver resolves the solution (ν = 0.1 on
/// 128 points) and large where it cannot (ν = 0.002 on 32 points: the shocks are far
/// narrower than the grid), so a table can tell a trustworthy target from a bad one.
#[test]
fn the_convergence_check_separates_resolved_from_unresolved_solutions() {
    let mut good = BurgersConfig::new(2, 32, 5);
    good.solver_points = 128;
    good.horizon = 0.25;
    let resolved = convergence_check(&good, 2).unwrap();
    assert!(resolved < 1e-6, "{resolved}");
    let mut bad = good.clone();
    bad.solver_points = 32;
    bad.viscosity = 0.002;
    let unresolved = convergence_check(&bad, 2).unwrap();
    assert!(unresolved > 1e-2, "{unresolved}");
}
