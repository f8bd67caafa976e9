//! The Gaussian-mixture task of `closed-form-classes`: its sets share the class means
//! but not their samples, every class has its samples, and bad settings are named.

use models::data::mixture::{gaussian_mixture, Mixture};

#[test]
fn train_and_test_share_means_not_samples() {
    let m = Mixture {
        classes: 5,
        dim: 3,
        spread: 4.0,
        seed: 7,
    };
    let train = gaussian_mixture(&m, 400, 0).unwrap();
    let test = gaussian_mixture(&m, 400, 1).unwrap();
    assert_eq!(train.x.shape(), &[2000, 3]);
    let (labels, classes) = train.labels().unwrap();
    assert_eq!(classes, 5);
    assert!(labels.iter().enumerate().all(|(i, &l)| l == i % 5));
    assert_ne!(train.x.to_vec(), test.x.to_vec());
    // Class means of the two sets agree to a few standard errors (1/√400 = 0.05 per
    // coordinate, unit noise), far closer than the spread of the means (4).
    let mean_of = |d: &models::data::Dataset, c: usize| -> Vec<f64> {
        let x = d.x.to_vec();
        let mut s = vec![0.0; 3];
        for i in (c..2000).step_by(5) {
            for j in 0..3 {
                s[j] += x[i * 3 + j] / 400.0;
            }
        }
        s
    };
    for c in 0..5 {
        let (a, b) = (mean_of(&train, c), mean_of(&test, c));
        assert!(
            a.iter().zip(&b).all(|(p, q)| (p - q).abs() < 0.3),
            "{a:?} {b:?}"
        );
    }
    let bad = Mixture { classes: 1, ..m };
    assert!(gaussian_mixture(&bad, 10, 0)
        .unwrap_err()
        .to_string()
        .contains("at least 2 classes"));
    assert!(gaussian_mixture(
        &Mixture {
            spread: f64::NAN,
            ..m
        },
        10,
        0
    )
    .is_err());
}
