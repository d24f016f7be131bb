//! The `harnessweaver` command line, shared by the Rust binary, the Python
//! console script and the npm bin.
//!
//! STUB: the loader work fills in `doctor` and `tools pin`.

/// Runs the command line with `args` (without the program name) and returns
/// the exit code: 0 clean, 1 problems found, 2 usage error.
pub fn run(args: &[String]) -> i32 {
    let _ = args;
    eprintln!("harnessweaver: no command yet");
    2
}
