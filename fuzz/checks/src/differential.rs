//! The differential target: the bytes decoded as a program of tensor operations
//! ([`tensor::differential::Program::decode`]) run on the engine in f64 and on the
//! naive reference evaluator; a disagreement beyond the argued tolerance (see
//! [`tensor::differential`]) panics with the step that parted.

use tensor::differential::Program;

/// Runs the program in `bytes` (nothing when the bytes end inside its operands).
pub fn run(bytes: &[u8]) {
    if let Some(program) = Program::decode(bytes) {
        if let Err(e) = program.run() {
            panic!("differential: {e}");
        }
    }
}
