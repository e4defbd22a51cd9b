//! The CPU time of this process.

use std::time::Duration;

/// User plus system CPU time of this whole process, from `/proc/self/stat` (Linux; `None`
/// elsewhere). The kernel reports it in ticks of 1/100 s (`USER_HZ`).
pub fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses: state is field 3, utime 14.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}
