//! The `harnessweaver` command line; the implementation lives in the core.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(harnessweaver_core::cli::run(&args));
}
