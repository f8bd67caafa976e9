//! Caller-given sizes into the constructors that allocate from them: a size whose
//! element count overflows or passes the allocation cap (`tensor::limits`) must be
//! an error before any memory is requested (an allocation first would abort the
//! process, which the fuzzer reports as a crash); a small one must give the shape
//! asked for. Sizes in between are real allocations and are not called.

use crate::input::Input;
use nn::layers::{attention, positional};
use tensor::fft::{FftPlan, Norm};
use tensor::{Rng, Tensor};

/// Element counts at or below this are called for real.
const SMALL: usize = 4096;

/// A size: one byte picks a magnitude 2ᵏ (k < 64), the next an offset in
/// −128…127, so sizes just below, at and far past the cap all occur.
fn size(input: &mut Input) -> Option<usize> {
    let shift = input.below(64)?;
    let offset = input.byte()? as isize - 128;
    Some((1usize << shift).saturating_add_signed(offset))
}

/// The outcome of one constructor: its shape, or an error.
type Outcome = tensor::Result<Vec<usize>>;

fn shape<T>(r: tensor::Result<Tensor<T>>) -> Outcome
where
    T: tensor::Element,
{
    r.map(|t| t.shape().to_vec())
}

/// Runs the constructors that `bytes` choose, each with sizes it reads.
pub fn run(bytes: &[u8]) {
    let mut input = Input::new(bytes);
    while let Some(op) = input.below(12) {
        let (Some(a), Some(b)) = (size(&mut input), size(&mut input)) else {
            return;
        };
        let small = a.clamp(1, SMALL);
        // (elements asked for, the shape a success must have, the call)
        let (numel, want, call): (Option<usize>, Vec<usize>, Box<dyn Fn() -> Outcome>) = match op {
            0 => (
                Some(a),
                vec![a],
                Box::new(move || shape(Tensor::<f64>::arange(0.0, a as f64, 1.0))),
            ),
            1 => (
                Some(a),
                vec![a],
                Box::new(move || shape(Tensor::<f32>::linspace(0.0, 1.0, a))),
            ),
            2 => (
                a.checked_mul(a),
                vec![a, a],
                Box::new(move || shape(Tensor::<f64>::eye(a))),
            ),
            3 => (
                a.checked_mul(b),
                vec![a, b],
                Box::new(move || shape(Tensor::<f32>::zeros(&[a, b]))),
            ),
            4 => (
                a.checked_mul(b),
                vec![a, b],
                Box::new(move || {
                    shape(Tensor::<f64>::rand_normal(
                        &[a, b],
                        0.0,
                        1.0,
                        &mut Rng::new(1),
                    ))
                }),
            ),
            5 => (
                Some(a),
                vec![1, a],
                Box::new(move || {
                    let bins = Tensor::<f64>::ones(&[1, 3, 2])?;
                    shape(bins.irfft(-1, a, Norm::Backward))
                }),
            ),
            6 => (
                a.checked_mul(b),
                vec![a, b],
                Box::new(move || shape(positional::sinusoidal::<f32>(a, b))),
            ),
            7 => (
                a.checked_mul(b),
                vec![a, b],
                Box::new(move || shape(attention::causal_mask::<f32>(a, b))),
            ),
            8 => (
                small.checked_mul(b),
                vec![small, 1, 1, b],
                Box::new(move || shape(attention::padding_mask::<f32>(&vec![1; small], b))),
            ),
            9 => (
                Some(a),
                vec![a],
                Box::new(move || FftPlan::<f64>::new(a).map(|p| vec![p.len()])),
            ),
            10 => (
                Some(a),
                vec![a, 1],
                Box::new(move || {
                    shape(models::data::toy::Target1d::Gumbel.sample(a, &mut Rng::new(2)))
                }),
            ),
            _ => (
                a.checked_mul(b / 2 + 1),
                vec![a, b],
                Box::new(move || {
                    models::data::burgers::random_field(a, b, &mut Rng::new(3))
                        .map(|s| vec![s.batch, s.points])
                }),
            ),
        };
        match numel {
            Some(n) if n <= SMALL => {
                if let Ok(got) = call() {
                    assert_eq!(got, want, "constructor {op} with sizes {a}, {b}");
                }
            }
            Some(n) if n <= tensor::limits::max_elements() => {}
            _ => assert!(
                call().is_err(),
                "constructor {op} accepted sizes {a}, {b} past the allocation cap"
            ),
        }
    }
}
