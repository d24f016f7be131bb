// Cargo only resolves build-dependencies of a package that has a build script.
fn main() {}
