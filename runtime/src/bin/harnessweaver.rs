//! The `harnessweaver` command line; the implementation lives in harnessweaver-runtime.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(harnessweaver_runtime::cli::run(&args));
}
