//! The allocation cap and checked size arithmetic: sizes that cannot be allocated
//! are errors naming the shape, never an abort or a wrapped size. (Its own test
//! binary: the cap is process-wide.)

use tensor::limits::{max_elements, set_max_elements, DEFAULT_MAX_ELEMENTS};
use tensor::{Conv2dSpec, Tensor};

#[test]
fn sizes_past_the_cap_or_overflowing_are_named_errors() {
    assert_eq!(max_elements(), DEFAULT_MAX_ELEMENTS);
    // Sizes that fit in a usize on 32-bit targets too.
    let huge = DEFAULT_MAX_ELEMENTS * 8;
    let e = Tensor::<f32>::zeros(&[huge]).err().unwrap().to_string();
    assert!(e.contains(&format!("[{huge}]")) && e.contains("cap"), "{e}");
    let e = Tensor::<f64>::zeros(&[huge, huge])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("too many elements"), "{e}");
    // conv2d with a huge padding: the padded size and the output are checked (this
    // returned a [1, 1, 2⁶³, 2⁶³] tensor before).
    let x = Tensor::<f32>::zeros(&[1, 1, 4, 4]).unwrap();
    let w = Tensor::<f32>::zeros(&[1, 1, 3, 3]).unwrap();
    for padding in [usize::MAX / 2, huge, 1 << 20] {
        let spec = Conv2dSpec {
            padding: (padding, padding),
            ..Conv2dSpec::default()
        };
        let e = x.conv2d(&w, spec).err().map(|e| e.to_string());
        assert!(e.is_some(), "padding {padding} was accepted");
    }
    let spec = Conv2dSpec {
        dilation: (usize::MAX, 1),
        ..Conv2dSpec::default()
    };
    assert!(x.conv2d(&w, spec).is_err());
    // A lower cap applies at once; a zero cap is refused.
    set_max_elements(1000).unwrap();
    assert!(Tensor::<f32>::zeros(&[1000]).is_ok());
    let e = Tensor::<f32>::zeros(&[1001]).err().unwrap().to_string();
    assert!(e.contains("1001") && e.contains("1000"), "{e}");
    let a = Tensor::<f32>::zeros(&[40, 1]).unwrap();
    assert!(a.matmul(&Tensor::zeros(&[1, 40]).unwrap()).is_err());
    assert!(set_max_elements(0).is_err());
    set_max_elements(DEFAULT_MAX_ELEMENTS).unwrap();
}
