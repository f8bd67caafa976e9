//! Vision layers: Conv2d, BatchNorm (training statistics, running statistics,
//! evaluation mode, gradients), GroupNorm, the classifiers' output shapes and
//! parameter counts against the published ones, and the augmentations.

use crate::common::opts;
use autograd::{gradcheck, GradcheckOptions, Var};
use nn::augment::Augment;
use nn::check::gradcheck_params;
use nn::nets::resnet::{ResNet, ResNetConfig};
use nn::nets::vgg::{vgg16_layers, Vgg};
use nn::nets::wide_resnet::WideResNet;
use nn::nets::Classifier;
use nn::{BatchNorm, Conv2d, GroupNorm, Module, ParamStore};
use tensor::{Conv2dSpec, Rng, Tensor};

fn rand(shape: &[usize], seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(shape, 1.5, 2.0, &mut Rng::new(seed)).unwrap()
}

#[test]
fn conv2d_module_adds_its_bias_per_channel_and_passes_gradcheck() {
    let store = ParamStore::<f64>::new();
    let conv = Conv2d::new(
        &store.root(),
        (4, 6),
        3,
        Conv2dSpec {
            groups: 2,
            ..Conv2dSpec::new(2, 1)
        },
        true,
        &mut Rng::new(1),
    )
    .unwrap();
    let x = Var::constant(rand(&[2, 4, 7, 7], 2));
    let y = conv.forward(&x).unwrap();
    assert_eq!(y.shape(), &[2, 6, 4, 4]);
    let no_bias = x.conv2d(&conv.weight.var(), conv.spec).unwrap();
    let b = conv.bias.as_ref().unwrap().value().to_vec();
    let (yv, nv) = (y.value().to_vec(), no_bias.value().to_vec());
    for (i, (a, c)) in yv.iter().zip(&nv).enumerate() {
        assert!((a - c - b[(i / 16) % 6]).abs() < 1e-12);
    }
    assert!(
        gradcheck_params(&store, || conv.forward(&x)?.tanh()?.sum_all(), &opts(2, 3))
            .unwrap()
            .checks
            > 0
    );
    assert!(Conv2d::<f64>::new(
        &store.root().sub("bad"),
        (3, 4),
        3,
        Conv2dSpec {
            groups: 2,
            ..Conv2dSpec::default()
        },
        true,
        &mut Rng::new(1)
    )
    .is_err());
}

#[test]
fn batch_norm_uses_batch_statistics_in_training_and_running_ones_in_evaluation() {
    let store = ParamStore::<f64>::new();
    let bn = BatchNorm::with(&store.root(), 3, 0.25, 1e-5).unwrap();
    let x = rand(&[4, 3, 5, 5], 7);
    let y = bn
        .forward(&Var::constant(x.clone()))
        .unwrap()
        .value()
        .clone();
    // Each channel of the output has mean 0 and (biased) variance 1 − ε/(σ² + ε).
    let mean = y.mean(&[0, 2, 3], false).unwrap().to_vec();
    let var = y.var(&[0, 2, 3], 0, false).unwrap().to_vec();
    let xvar = x.var(&[0, 2, 3], 0, false).unwrap().to_vec();
    for c in 0..3 {
        assert!(mean[c].abs() < 1e-12);
        assert!((var[c] - xvar[c] / (xvar[c] + 1e-5)).abs() < 1e-12);
    }
    // Running statistics moved by momentum 0.25 from (0, 1) toward the batch mean and
    // the unbiased variance.
    let bm = x.mean(&[0, 2, 3], false).unwrap().to_vec();
    let unbiased = x.var(&[0, 2, 3], 1, false).unwrap().to_vec();
    let (rm, rv) = (
        bn.running_mean.value().to_vec(),
        bn.running_var.value().to_vec(),
    );
    for c in 0..3 {
        assert!((rm[c] - 0.25 * bm[c]).abs() < 1e-12);
        assert!((rv[c] - (0.75 + 0.25 * unbiased[c])).abs() < 1e-12);
    }
    // Evaluation: (x − running mean)/√(running var + ε), statistics untouched.
    store.eval();
    let e = bn
        .forward(&Var::constant(x.clone()))
        .unwrap()
        .value()
        .to_vec();
    let xv = x.to_vec();
    for (i, v) in e.iter().enumerate() {
        let c = (i / 25) % 3;
        assert!((v - (xv[i] - rm[c]) / (rv[c] + 1e-5).sqrt()).abs() < 1e-12);
    }
    assert_eq!(bn.running_mean.value().to_vec(), rm);
    store.train();
    // Gradients through the batch statistics, for the input and for γ, β.
    let r = gradcheck(
        |v| bn.forward(&v[0])?.tanh(),
        &[rand(&[3, 3, 2, 2], 8)],
        &GradcheckOptions::default(),
    );
    assert!(r.is_ok(), "{r:?}");
    let xin = Var::constant(rand(&[3, 3, 2, 2], 9));
    assert!(
        gradcheck_params(&store, || bn.forward(&xin)?.tanh()?.sum_all(), &opts(2, 4))
            .unwrap()
            .checks
            > 0
    );
    // One value per channel cannot be normalised in training; wrong channels are refused.
    assert!(bn.forward(&Var::constant(rand(&[1, 3], 1))).is_err());
    assert!(bn.forward(&Var::constant(rand(&[2, 4, 2, 2], 1))).is_err());
    // BatchNorm1d on [N, C].
    let bn1 = BatchNorm::new(&store.root().sub("one"), 3).unwrap();
    let y1 = bn1
        .forward(&Var::constant(rand(&[6, 3], 2)))
        .unwrap()
        .value()
        .clone();
    assert!(y1
        .mean(&[0], false)
        .unwrap()
        .to_vec()
        .iter()
        .all(|m| m.abs() < 1e-12));
}

#[test]
fn group_norm_normalises_each_group_of_each_sample() {
    let store = ParamStore::<f64>::new();
    let gn = GroupNorm::new(&store.root(), 2, 4).unwrap();
    let x = rand(&[3, 4, 3, 3], 5);
    let y = gn
        .forward(&Var::constant(x))
        .unwrap()
        .value()
        .reshape(&[3, 2, 18])
        .unwrap();
    assert!(y
        .mean(&[2], false)
        .unwrap()
        .to_vec()
        .iter()
        .all(|m| m.abs() < 1e-12));
    assert!(y
        .var(&[2], 0, false)
        .unwrap()
        .to_vec()
        .iter()
        .all(|v| (v - 1.0).abs() < 1e-3));
    let r = gradcheck(
        |v| gn.forward(&v[0])?.tanh(),
        &[rand(&[2, 4, 2, 1], 6)],
        &GradcheckOptions::default(),
    );
    assert!(r.is_ok(), "{r:?}");
    assert!(GroupNorm::<f64>::new(&store.root().sub("bad"), 3, 4).is_err());
}

fn count(store: &ParamStore<f32>) -> usize {
    store.num_trainable()
}

#[test]
fn classifiers_have_the_published_parameter_counts_and_output_shapes() {
    let x = Var::constant(
        Tensor::<f32>::rand_normal(&[2, 3, 32, 32], 0.0, 1.0, &mut Rng::new(1)).unwrap(),
    );
    let check = |net: &dyn Classifier<f32>,
                 store: &ParamStore<f32>,
                 params: usize,
                 features: usize,
                 name: &str| {
        assert_eq!(count(store), params, "{name} parameters");
        assert_eq!(net.forward(&x).unwrap().shape(), &[2, 10], "{name} output");
        assert_eq!(
            net.features(&x).unwrap().shape(),
            &[2, features],
            "{name} features"
        );
    };
    let s = ParamStore::new();
    let net = ResNet::new(&s.root(), &ResNetConfig::resnet18(10), &mut Rng::new(0)).unwrap();
    check(&net, &s, 11_173_962, 512, "ResNet-18");
    let s = ParamStore::new();
    let net = ResNet::new(&s.root(), &ResNetConfig::resnet34(10), &mut Rng::new(0)).unwrap();
    check(&net, &s, 21_282_122, 512, "ResNet-34");
    let s = ParamStore::new();
    let net = Vgg::new(&s.root(), &vgg16_layers(), 3, 10, &mut Rng::new(0)).unwrap();
    check(&net, &s, 14_728_266, 512, "VGG16-BN");
    let s = ParamStore::new();
    let net = WideResNet::new(&s.root(), 16, 4, 10, 0.0, &mut Rng::new(0)).unwrap();
    check(&net, &s, 2_748_890, 256, "WRN-16-4");
    // WRN-28-10 by configuration (36.5 M parameters; counted, not run).
    let s = ParamStore::<f32>::new();
    WideResNet::new(&s.root(), 28, 10, 10, 0.3, &mut Rng::new(0)).unwrap();
    assert_eq!(count(&s), 36_479_194, "WRN-28-10 parameters");
    // ResNet-18 with 100 classes.
    let s = ParamStore::<f32>::new();
    ResNet::new(&s.root(), &ResNetConfig::resnet18(100), &mut Rng::new(0)).unwrap();
    assert_eq!(count(&s), 11_220_132);
    assert!(
        WideResNet::<f32>::new(&s.root().sub("bad"), 27, 2, 10, 0.0, &mut Rng::new(0)).is_err()
    );
}

#[test]
fn augmentations_crop_flip_and_cut_out_as_specified() {
    let x = Tensor::<f64>::rand_uniform(&[3, 2, 8, 8], 1.0, 2.0, &mut Rng::new(4)).unwrap();
    let xv = x.to_vec();
    let at = |v: &[f64], n: usize, c: usize, y: usize, xx: usize| v[((n * 2 + c) * 8 + y) * 8 + xx];
    // Flip only, always: a mirror image.
    let flip = Augment {
        crop_padding: 0,
        reflect: false,
        flip: 1.0,
        cutout: None,
    };
    let f = flip.apply(&x, &mut Rng::new(1)).unwrap().to_vec();
    for n in 0..3 {
        for y in 0..8 {
            for xx in 0..8 {
                assert_eq!(at(&f, n, 1, y, xx), at(&xv, n, 1, y, 7 - xx));
            }
        }
    }
    // Zero-padded crop: each image is the input shifted by one (dy, dx) in [−2, 2]²,
    // zeros where it came from the padding (the inputs are ≥ 1, so zeros are padding).
    let crop = Augment {
        crop_padding: 2,
        reflect: false,
        flip: 0.0,
        cutout: None,
    };
    let c = crop.apply(&x, &mut Rng::new(2)).unwrap().to_vec();
    for n in 0..3 {
        let found = (-2isize..=2)
            .flat_map(|dy| (-2isize..=2).map(move |dx| (dy, dx)))
            .any(|(dy, dx)| {
                (0..2).all(|ch| {
                    (0..8).all(|y| {
                        (0..8).all(|xx| {
                            let (sy, sx) = (y as isize + dy, xx as isize + dx);
                            let want = if (0..8).contains(&sy) && (0..8).contains(&sx) {
                                at(&xv, n, ch, sy as usize, sx as usize)
                            } else {
                                0.0
                            };
                            at(&c, n, ch, y, xx) == want
                        })
                    })
                })
            });
        assert!(found, "image {n} is not a shifted copy");
    }
    // Cutout always: the zeros form one square of side ≤ 4 (clipped), the same in
    // every channel, and everything else is untouched.
    let cut = Augment {
        crop_padding: 0,
        reflect: false,
        flip: 0.0,
        cutout: Some((4, 1.0)),
    };
    let k = cut.apply(&x, &mut Rng::new(3)).unwrap().to_vec();
    for n in 0..3 {
        let zeros: Vec<(usize, usize)> = (0..8)
            .flat_map(|y| (0..8).map(move |xx| (y, xx)))
            .filter(|&(y, xx)| at(&k, n, 0, y, xx) == 0.0)
            .collect();
        assert!(!zeros.is_empty() && zeros.len() <= 16);
        let (ys, xs): (Vec<usize>, Vec<usize>) = zeros.iter().cloned().unzip();
        let h = ys.iter().max().unwrap() - ys.iter().min().unwrap() + 1;
        let w = xs.iter().max().unwrap() - xs.iter().min().unwrap() + 1;
        assert_eq!(h * w, zeros.len(), "a rectangle");
        for y in 0..8 {
            for xx in 0..8 {
                let z = zeros.contains(&(y, xx));
                assert_eq!(at(&k, n, 1, y, xx) == 0.0, z);
                if !z {
                    assert_eq!(at(&k, n, 0, y, xx), at(&xv, n, 0, y, xx));
                }
            }
        }
    }
    // Reflection keeps every value from the image; seeded; bad input refused.
    let r = Augment::cifar();
    let a = r.apply(&x, &mut Rng::new(9)).unwrap();
    assert_eq!(a.to_vec(), r.apply(&x, &mut Rng::new(9)).unwrap().to_vec());
    assert!(r
        .apply(&Tensor::<f64>::zeros(&[2, 3, 3]).unwrap(), &mut Rng::new(0))
        .is_err());
    assert!(r
        .apply(
            &Tensor::<f64>::zeros(&[1, 1, 4, 4]).unwrap(),
            &mut Rng::new(0)
        )
        .is_err());
}
