//! The CPU time a process has used, read from `/proc/<pid>/stat`, for the
//! benchmarks that split a run's CPU between the processes that ran it.

/// CPU seconds a process used: user and system.
#[derive(Clone, Copy, Debug)]
pub struct Cpu {
    pub user: f64,
    pub system: f64,
}

impl Cpu {
    /// What process `pid` has used so far.
    pub fn of(pid: i32) -> Cpu {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // After the command's name: field 3 (state) is index 0; utime and
        // stime (fields 14 and 15) are 11 and 12.
        let fields: Vec<&str> = text
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let seconds = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<f64>().ok())
                .map_or(f64::NAN, |t| t / hz)
        };
        Cpu {
            user: seconds(11),
            system: seconds(12),
        }
    }

    pub fn since(self, before: Cpu) -> Cpu {
        Cpu {
            user: self.user - before.user,
            system: self.system - before.system,
        }
    }

    pub fn total(self) -> f64 {
        self.user + self.system
    }
}
