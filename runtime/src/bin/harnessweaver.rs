//! The `harnessweaver` command line; the implementation lives in harnessweaver-runtime.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // OTLP export when OTEL_EXPORTER_OTLP_ENDPOINT is set; flushed before exit.
    let telemetry = match harnessweaver_runtime::telemetry::init_from_env() {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("warning: OpenTelemetry export is off: {e}");
            None
        }
    };
    let code = harnessweaver_runtime::cli::run(&args);
    drop(telemetry);
    std::process::exit(code);
}
