//! `harnessweaver-confine --policy JSON -- COMMAND ARGS…`: the launcher of
//! confined process tools. Run inside bubblewrap's namespaces by the
//! process transport; restricts itself with Landlock and seccomp, then
//! becomes COMMAND. Not meant to be run by hand.

fn main() -> std::process::ExitCode {
    harnessweaver_runtime::transport::confine::launcher_main(std::env::args_os().collect())
}
