//! The `models` binary: experiments that reproduce each method's claims.
#![forbid(unsafe_code)]

use tensor::{Rng, Tensor};

/// Fits y = X w by gradient descent on the mean squared error with the hand-derived
/// gradient 2/n Xᵀ(Xw − y), and prints the recovered weights.
fn demo() -> tensor::Result<()> {
    let mut rng = Rng::new(0);
    let (n, d) = (256, 4);
    let x = Tensor::<f64>::rand_normal(&[n, d], 0.0, 1.0, &mut rng)?;
    let w_true = Tensor::from_vec(vec![1.5, -2.0, 0.5, 3.0], &[d, 1])?;
    let noise = Tensor::<f64>::rand_normal(&[n, 1], 0.0, 0.1, &mut rng)?;
    let y = x.matmul(&w_true)?.add(&noise)?;
    let mut w = Tensor::<f64>::zeros(&[d, 1])?;
    for step in 0..200 {
        let r = x.matmul(&w)?.sub(&y)?;
        let grad = x.t()?.matmul(&r)?.mul_scalar(2.0 / n as f64);
        w = w.sub(&grad.mul_scalar(0.1))?;
        if step % 50 == 0 {
            eprintln!("step {step:3}  mse {:.6}", r.square().mean_all()?.item()?);
        }
    }
    println!("true weights      {:?}", w_true.to_vec());
    println!("recovered weights {:?}", w.to_vec());
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") | None => demo(),
        Some(other) => {
            eprintln!("unknown experiment '{other}'; available: demo");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
