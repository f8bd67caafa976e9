//! Every caller-controlled failure gives an error naming the op and the values.

use tensor::{Error, Tensor};

fn t(shape: &[usize]) -> Tensor<f64> {
    Tensor::zeros(shape).unwrap()
}

#[test]
fn shape_mismatches_are_named() {
    let e = t(&[3, 4]).matmul(&t(&[5, 2])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "matmul: [3, 4] x [5, 2]: inner dimensions 4 and 5 differ"
    );
    let e = t(&[3]).matmul(&t(&[3, 1])).unwrap_err();
    assert!(e.to_string().contains("at least 2 axes"), "{e}");
    let e = t(&[2, 3]).add(&t(&[4])).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("add: shapes [2, 3] and [4] do not broadcast"),
        "{e}"
    );
    let e = t(&[2, 3]).reshape(&[4, 2]).unwrap_err();
    assert!(
        e.to_string()
            .contains("cannot reshape [2, 3] (6 elements) into [4, 2]"),
        "{e}"
    );
    let e = Tensor::cat(&[&t(&[2, 3]), &t(&[2, 4])], 0).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cat: shapes [2, 3] and [2, 4] differ off axis 0"),
        "{e}"
    );
    let e = t(&[2, 3]).split(1, &[1, 1]).unwrap_err();
    assert!(e.to_string().contains("do not add up"), "{e}");
    let e = Tensor::<f64>::from_vec(vec![1.0; 5], &[2, 3]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "from_vec: shape [2, 3] needs 6 elements but 5 were given"
    );
    let e = t(&[2, 3]).squeeze(0).unwrap_err();
    assert!(e.to_string().contains("has size 2, not 1"), "{e}");
    let e = t(&[2, 3]).broadcast_to(&[4, 3]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Shape {
                op: "broadcast_to",
                ..
            }
        ),
        "{e}"
    );
    let e = t(&[2, 3]).narrow(1, 2, 2).unwrap_err();
    assert!(e.to_string().contains("range 2..4 exceeds axis 1"), "{e}");
}

#[test]
fn axes_out_of_range_are_named() {
    let e = t(&[2, 3]).sum(&[2], false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "sum: axis 2 is out of range for a tensor of rank 2"
    );
    let e = t(&[2, 3]).softmax(-3).unwrap_err();
    assert_eq!(
        e,
        Error::Axis {
            op: "softmax",
            axis: -3,
            ndim: 2
        }
    );
    let e = t(&[2, 3]).permute(&[0, 0]).unwrap_err();
    assert!(e.to_string().contains("repeated"), "{e}");
    let e = t(&[2, 3]).transpose(0, 5).unwrap_err();
    assert!(matches!(
        e,
        Error::Axis {
            op: "transpose",
            axis: 5,
            ndim: 2
        }
    ));
}

#[test]
fn indices_out_of_range_are_named() {
    let e = t(&[2, 3]).index_select(1, &[0, 3]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "index_select: index 3 is out of range for axis 1 of length 3"
    );
    let idx = Tensor::from_vec(vec![0usize, 7], &[1, 2]).unwrap();
    let e = t(&[2, 3]).gather(0, &idx).unwrap_err();
    assert_eq!(
        e.to_string(),
        "gather: index 7 is out of range for axis 0 of length 2"
    );
    let e = t(&[2, 3]).scatter_add(0, &idx, &t(&[1, 2])).unwrap_err();
    assert!(e.to_string().contains("index 7"), "{e}");
    let e = t(&[2, 3]).get(&[1, 3]).unwrap_err();
    assert!(matches!(
        e,
        Error::Index {
            op: "get",
            index: 3,
            len: 3,
            axis: 1
        }
    ));
}

#[test]
fn empty_and_degenerate_inputs_are_named() {
    assert!(t(&[0]).max_all().unwrap_err().to_string().contains("empty"));
    assert!(t(&[0, 2]).mean_all().is_err());
    assert!(t(&[2])
        .item()
        .unwrap_err()
        .to_string()
        .contains("exactly one element"));
    assert!(Tensor::<f64>::cat(&[], 0)
        .unwrap_err()
        .to_string()
        .contains("at least one"));
    assert!(t(&[3]).chunk(0, 0).is_err());
    assert!(t(&[3]).slice(0, 0, 3, 0).is_err());
    assert!(t(&[3]).norm(0.0, &[0], false).is_err());
    assert!(Tensor::<f64>::arange(0.0, 1.0, 0.0).is_err());
    assert!(Tensor::<f64>::zeros(&[usize::MAX, 2]).is_err());
    assert!(Tensor::<f64>::linspace(f64::NAN, 1.0, 3).is_err());
}

/// Every failure has a kind a caller can branch on and names its operation: a
/// shape mismatch, an axis or index out of range, a bad value, a singular matrix,
/// a size past the allocation cap (and one whose element count overflows).
#[test]
fn errors_have_a_kind_and_an_op() {
    use tensor::ErrorKind;
    let a = Tensor::<f64>::zeros(&[2, 3]).unwrap();
    let kind_op = |e: tensor::Error| (e.kind(), e.op().to_string());
    assert_eq!(
        kind_op(a.add(&Tensor::zeros(&[4]).unwrap()).unwrap_err()).0,
        ErrorKind::Shape
    );
    assert_eq!(kind_op(a.sum(&[5], false).unwrap_err()).0, ErrorKind::Index);
    assert_eq!(
        kind_op(a.index_select(0, &[7]).unwrap_err()).0,
        ErrorKind::Index
    );
    assert_eq!(
        kind_op(Tensor::<f64>::linspace(f64::NAN, 1.0, 3).unwrap_err()),
        (ErrorKind::Value, "linspace".to_string())
    );
    let singular = Tensor::<f64>::from_vec(vec![1.0, 2.0, 2.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(
        kind_op(singular.inverse().unwrap_err()).0,
        ErrorKind::Numerical
    );
    assert_eq!(
        kind_op(Tensor::<f32>::zeros(&[1 << 31]).unwrap_err()),
        (ErrorKind::Limit, "zeros".to_string())
    );
    assert_eq!(
        kind_op(Tensor::<f32>::zeros(&[usize::MAX, 2]).unwrap_err()).0,
        ErrorKind::Limit
    );
}
