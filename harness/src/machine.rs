//! A one-line description of the machine, printed above the results.

use std::fmt;

/// What the numbers were measured on.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Machine {
    /// CPU model name.
    pub(crate) cpu: String,
    /// Logical CPUs listed in /proc/cpuinfo.
    pub(crate) logical_cpus: usize,
    /// CPUs this process may run on (affinity, cgroup quota).
    pub(crate) available: usize,
    /// Total memory.
    pub(crate) memory_bytes: Option<u64>,
}

impl Machine {
    /// Reads /proc (Linux); fields it can't read stay unknown.
    pub(crate) fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let (cpu, logical_cpus) = parse_cpuinfo(&cpuinfo);
        Machine {
            cpu: cpu.unwrap_or_else(|| std::env::consts::ARCH.to_string()),
            logical_cpus,
            available: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_bytes: parse_meminfo(&meminfo),
        }
    }
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} · {} logical CPUs", self.cpu, self.logical_cpus)?;
        if self.available != self.logical_cpus {
            write!(f, " ({} available)", self.available)?;
        }
        if let Some(m) = self.memory_bytes {
            write!(f, " · {:.1} GiB RAM", m as f64 / (1u64 << 30) as f64)?;
        }
        Ok(())
    }
}

/// The first `model name` and the number of `processor` entries.
fn parse_cpuinfo(text: &str) -> (Option<String>, usize) {
    let field = |line: &str, name: &str| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == name).then(|| v.trim().to_string())
    };
    let model = text.lines().find_map(|l| field(l, "model name"));
    let count = text
        .lines()
        .filter(|l| field(l, "processor").is_some())
        .count();
    (model, count)
}

/// The machine's memory (`MemTotal`), if /proc/meminfo says.
pub(crate) fn memory_bytes() -> Option<u64> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `MemTotal` in bytes.
fn parse_meminfo(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let cpuinfo = "processor\t: 0\nmodel name\t: Example CPU @ 2.00GHz\n\nprocessor\t: 1\nmodel name\t: Example CPU @ 2.00GHz\n";
        assert_eq!(
            parse_cpuinfo(cpuinfo),
            (Some("Example CPU @ 2.00GHz".into()), 2)
        );
        assert_eq!(
            parse_meminfo("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            Some(24_576_000 * 1024)
        );
        let m = Machine {
            cpu: "X".into(),
            logical_cpus: 2,
            available: 2,
            memory_bytes: Some(1 << 30),
        };
        assert_eq!(m.to_string(), "X · 2 logical CPUs · 1.0 GiB RAM");
    }
}
