//! candle peer of the MLP and conv-net training steps (`benches/benches/training_step.rs`,
//! `train_step_mlp_784_512_512_10_b128_f32_adam`, and `benches/benches/conv.rs`,
//! `convnet_3_64_64_b32_32x32_f32_adam`), the same networks and steps as
//! `torch_mlp_step.py` and `torch_convnet_step.py`: f32 on the CPU, 8 random batches
//! cycled, cross-entropy, Adam at 1e-3 (candle's AdamW with no weight decay, which is
//! Adam). Prints the median step time.
//!
//! Not part of the workspace: `compare.sh` copies it into a scratch crate outside the
//! repository (candle is never in this project's dependency tree) and runs it once
//! per thread count, which candle reads from `RAYON_NUM_THREADS` and
//! `CANDLE_NUM_THREADS` at start-up.
//!
//!     candle_steps mlp|convnet THREADS

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{conv2d, linear, AdamW, Conv2dConfig, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use std::time::Instant;

/// One workload: its batches, labels, network and the number of warm-up and timed steps.
struct Workload {
    name: &'static str,
    batches: Vec<Tensor>,
    labels: Tensor,
    net: Box<dyn Module>,
    warmup: usize,
    timed: usize,
}

/// The MLP 784-512-512-10 with ReLU.
struct Mlp(candle_nn::Linear, candle_nn::Linear, candle_nn::Linear);

impl Module for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.0.forward(x)?.relu()?;
        let h = self.1.forward(&h)?.relu()?;
        self.2.forward(&h)
    }
}

/// conv 3→64, ReLU, conv 64→64, ReLU, global average pool, linear 64→10.
struct ConvNet(candle_nn::Conv2d, candle_nn::Conv2d, candle_nn::Linear);

impl Module for ConvNet {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.0.forward(x)?.relu()?;
        let h = self.1.forward(&h)?.relu()?;
        self.2.forward(&h.mean((2, 3))?)
    }
}

fn workload(name: &str, vb: VarBuilder, dev: &Device) -> Result<Workload> {
    let same = Conv2dConfig {
        padding: 1,
        ..Default::default()
    };
    let (net, shape, batch, warmup, timed, name): (Box<dyn Module>, Vec<usize>, usize, _, _, _) =
        match name {
            "mlp" => (
                Box::new(Mlp(
                    linear(784, 512, vb.pp("l1"))?,
                    linear(512, 512, vb.pp("l2"))?,
                    linear(512, 10, vb.pp("l3"))?,
                )),
                vec![128, 784],
                128,
                50,
                300,
                "MLP",
            ),
            "convnet" => (
                Box::new(ConvNet(
                    conv2d(3, 64, 3, same, vb.pp("c1"))?,
                    conv2d(64, 64, 3, same, vb.pp("c2"))?,
                    linear(64, 10, vb.pp("fc"))?,
                )),
                vec![32, 3, 32, 32],
                32,
                10,
                60,
                "conv-net",
            ),
            other => panic!("unknown workload '{other}' (mlp or convnet)"),
        };
    let batches = (0..8)
        .map(|_| Tensor::randn(0f32, 1f32, shape.as_slice(), dev))
        .collect::<Result<Vec<_>>>()?;
    let labels = Tensor::from_vec(
        (0..batch as u32).map(|i| i % 10).collect::<Vec<u32>>(),
        batch,
        dev,
    )?;
    Ok(Workload {
        name,
        batches,
        labels,
        net,
        warmup,
        timed,
    })
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: candle_steps mlp|convnet THREADS";
    let which = args.get(1).expect(usage);
    let threads: usize = args.get(2).and_then(|t| t.parse().ok()).expect(usage);
    // candle reads its thread count from the environment; a mismatch would time
    // the wrong configuration, so it is checked rather than assumed.
    assert_eq!(
        candle_core::utils::get_num_threads(),
        threads,
        "set RAYON_NUM_THREADS and CANDLE_NUM_THREADS to {threads}"
    );
    let dev = Device::Cpu;
    let vars = VarMap::new();
    let vb = VarBuilder::from_varmap(&vars, DType::F32, &dev);
    let w = workload(which, vb, &dev)?;
    let params = ParamsAdamW {
        lr: 1e-3,
        weight_decay: 0.0,
        ..Default::default()
    };
    let mut opt = AdamW::new(vars.all_vars(), params)?;
    let mut step = |i: usize| -> Result<f32> {
        let logits = w.net.forward(&w.batches[i % 8])?;
        let loss = candle_nn::loss::cross_entropy(&logits, &w.labels)?;
        opt.backward_step(&loss)?;
        loss.to_scalar::<f32>()
    };
    for i in 0..w.warmup {
        step(i)?;
    }
    let mut times = Vec::with_capacity(w.timed);
    for i in 0..w.timed {
        let start = Instant::now();
        step(i)?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    // The median as Python's `statistics.median` takes it (the peers' scripts).
    let n = times.len();
    let median = (times[(n - 1) / 2] + times[n / 2]) / 2.0;
    println!(
        "candle 0.11.1, {threads} thread(s): median {} step {:.3} ms over {} steps",
        w.name,
        median * 1e3,
        w.timed
    );
    Ok(())
}
