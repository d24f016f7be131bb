//! The one argument parser every command uses: a command declares its
//! options and positionals once ([`Spec`]); parsing, `--help` text and usage
//! errors (exit 2) all come from that declaration.

use std::fmt::Write as _;

/// One option: `--long`, an optional `-s`, and the name of its value when it
/// takes one (`--tool NAME`, `--tool=NAME`; `-n 5`, `-n5`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opt {
    pub long: &'static str,
    pub short: Option<char>,
    pub value: Option<&'static str>,
    pub help: &'static str,
}

impl Opt {
    /// A flag without a value.
    pub const fn flag(long: &'static str, help: &'static str) -> Opt {
        Opt { long, short: None, value: None, help }
    }

    /// An option taking a value named `value`.
    pub const fn value(long: &'static str, value: &'static str, help: &'static str) -> Opt {
        Opt { long, short: None, value: Some(value), help }
    }

    /// The same option with a short form.
    pub const fn short(self, c: char) -> Opt {
        Opt { short: Some(c), ..self }
    }
}

/// `--json`, shared by every command that prints results.
pub(crate) const JSON: Opt = Opt::flag("json", "print one JSON document for scripts (never coloured)");

/// The exit codes, printed at the end of every `--help`.
pub(crate) const EXIT_CODES: &str = "exit codes: 0 clean, 1 problems found or call refused, 2 usage error, 3 not available here";

/// A command: its words (`tools pin`), synopsis, description, options and
/// positionals (`(name, required)`; a trailing `...` name takes the rest).
#[derive(Debug)]
pub(crate) struct Spec {
    pub path: &'static str,
    pub synopsis: &'static str,
    pub about: &'static str,
    pub opts: &'static [Opt],
    pub positionals: &'static [(&'static str, bool)],
}

/// What the command line said.
#[derive(Debug, Default)]
pub(crate) struct Args {
    opts: Vec<(&'static str, Option<String>)>,
    pos: Vec<String>,
}

impl Args {
    /// Whether flag `long` was given.
    pub fn flag(&self, long: &str) -> bool {
        self.opts.iter().any(|(l, _)| *l == long)
    }

    /// The last value given to `long`.
    pub fn value(&self, long: &str) -> Option<&str> {
        self.opts.iter().rev().find(|(l, _)| *l == long).and_then(|(_, v)| v.as_deref())
    }

    /// Every value given to `long`, in order (a repeatable option).
    pub fn values(&self, long: &str) -> Vec<&str> {
        self.opts.iter().filter(|(l, _)| *l == long).filter_map(|(_, v)| v.as_deref()).collect()
    }

    /// Positional `i`.
    pub fn pos(&self, i: usize) -> Option<&str> {
        self.pos.get(i).map(String::as_str)
    }
}

/// The outcome of parsing: arguments, or `--help` was asked for.
#[derive(Debug)]
pub(crate) enum Parsed {
    Args(Args),
    Help,
}

impl Spec {
    /// The `--help` text.
    pub fn help(&self) -> String {
        let mut s = format!("usage: harnessweaver {} {}\n\n{}\n", self.path, self.synopsis, self.about);
        let opts: Vec<(String, &str)> = self
            .opts
            .iter()
            .map(|o| {
                let mut left = o.short.map_or_else(String::new, |c| format!("-{c}, "));
                let _ = write!(left, "--{}", o.long);
                if let Some(v) = o.value {
                    let _ = write!(left, " {v}");
                }
                (left, o.help)
            })
            .chain(std::iter::once(("-h, --help".to_string(), "print this help")))
            .collect();
        let width = opts.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
        s.push_str("\noptions:\n");
        for (left, help) in opts {
            let _ = writeln!(s, "  {left:width$}  {help}");
        }
        let _ = write!(s, "\n{EXIT_CODES}");
        s
    }

    fn find(&self, long: &str) -> Option<&Opt> {
        self.opts.iter().find(|o| o.long == long)
    }

    /// Parses `args` (after the command's words). `Err` is the usage error's
    /// message.
    pub fn parse(&self, args: &[&str]) -> Result<Parsed, String> {
        let mut out = Args::default();
        let mut it = args.iter();
        let mut only_positionals = false;
        while let Some(&a) = it.next() {
            if only_positionals || a == "-" || !a.starts_with('-') {
                out.pos.push(a.to_string());
                continue;
            }
            if a == "--" {
                only_positionals = true;
                continue;
            }
            if a == "--help" || a == "-h" {
                return Ok(Parsed::Help);
            }
            let (opt, inline) = if let Some(long) = a.strip_prefix("--") {
                let (name, inline) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (long, None),
                };
                (self.find(name).ok_or_else(|| format!("unknown option `--{name}`"))?, inline)
            } else {
                let mut chars = a.chars().skip(1);
                let c = chars.next().unwrap_or('-');
                let rest: String = chars.collect();
                let opt = self.opts.iter().find(|o| o.short == Some(c)).ok_or_else(|| format!("unknown option `{a}`"))?;
                (opt, (!rest.is_empty()).then_some(rest))
            };
            let value = match (opt.value, inline) {
                (None, None) => None,
                (None, Some(_)) => return Err(format!("`--{}` takes no value", opt.long)),
                (Some(_), Some(v)) => Some(v),
                (Some(v), None) => match it.next() {
                    Some(next) => Some((*next).to_string()),
                    None => return Err(format!("`--{}` needs a value ({v})", opt.long)),
                },
            };
            out.opts.push((opt.long, value));
        }
        let rest = self.positionals.last().is_some_and(|(n, _)| n.ends_with("..."));
        if !rest && out.pos.len() > self.positionals.len() {
            let extra = out.pos.get(self.positionals.len()).map_or("", String::as_str);
            return Err(format!("unexpected argument `{extra}`"));
        }
        if let Some((name, _)) = self.positionals.iter().skip(out.pos.len()).find(|(_, required)| *required) {
            return Err(format!("missing {name}"));
        }
        Ok(Parsed::Args(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: Spec = Spec {
        path: "t",
        synopsis: "FILE [--n N]",
        about: "test",
        opts: &[Opt::value("lines", "N", "lines").short('n'), Opt::flag("follow", "follow"), JSON],
        positionals: &[("FILE", true)],
    };

    fn parse(args: &[&str]) -> Result<Args, String> {
        match SPEC.parse(args)? {
            Parsed::Args(a) => Ok(a),
            Parsed::Help => Err("help".into()),
        }
    }

    #[test]
    fn forms() {
        let a = parse(&["f", "-n", "3", "--follow"]).unwrap();
        assert_eq!((a.pos(0), a.value("lines"), a.flag("follow"), a.flag("json")), (Some("f"), Some("3"), true, false));
        assert_eq!(parse(&["-n5", "f"]).unwrap().value("lines"), Some("5"));
        assert_eq!(parse(&["--lines=7", "f"]).unwrap().value("lines"), Some("7"));
        assert_eq!(parse(&["--", "-f"]).unwrap().pos(0), Some("-f"));
        assert_eq!(parse(&["f", "--help"]).unwrap_err(), "help");
        assert_eq!(parse(&[]).unwrap_err(), "missing FILE");
        assert_eq!(parse(&["f", "g"]).unwrap_err(), "unexpected argument `g`");
        assert_eq!(parse(&["f", "--strict"]).unwrap_err(), "unknown option `--strict`");
        assert_eq!(parse(&["f", "-n"]).unwrap_err(), "`--lines` needs a value (N)");
        assert_eq!(parse(&["f", "--json=1"]).unwrap_err(), "`--json` takes no value");
        assert!(SPEC.help().starts_with("usage: harnessweaver t FILE"));
        assert!(SPEC.help().contains("-n, --lines N") && SPEC.help().ends_with(EXIT_CODES));
    }
}
