/// Greets `name`.
pub fn greet(name: &str) -> String {
    format!("Helo, {name}!")
}
