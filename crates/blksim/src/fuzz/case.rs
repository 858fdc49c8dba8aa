//! One fuzz case: a fio job file, a device profile with `--set` overrides and a seed, and how
//! it is written down (the job file, the `blksim run` command line that reproduces it).

use std::fmt::Write as _;
use std::path::Path;

/// `BLKSIM_FAKE_TIME` for every child run: pins the report's wall-clock stamps, so two runs
/// of one case must give byte-identical JSON.
pub const FAKE_TIME: &str = "1795310737";

/// One `[section]` of the job file, options in order; `None` is a bare key (`time_based`).
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub name: String,
    pub opts: Vec<(String, Option<String>)>,
}

impl Section {
    pub fn new(name: &str) -> Section {
        Section {
            name: name.to_string(),
            opts: Vec::new(),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Option<String>> {
        self.opts.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Set `key` (replacing an earlier value, keeping its place).
    pub fn set(&mut self, key: &str, value: Option<String>) {
        match self.opts.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.opts.push((key.to_string(), value)),
        }
    }

    pub fn remove(&mut self, key: &str) {
        self.opts.retain(|(k, _)| k != key);
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The case's number under the fuzzer's seed (`blksim fuzz --seed=S --case=N` redoes it).
    pub index: u64,
    /// `--seed` of the run (the simulator's root seed).
    pub seed: u64,
    /// Bundled profile name.
    pub device: String,
    /// `--set=KEY=VALUE`, in order.
    pub sets: Vec<(String, String)>,
    /// The job file: `[global]` first if there is one, then the jobs.
    pub sections: Vec<Section>,
    /// `--output-format=json+` instead of `json`.
    pub json_plus: bool,
    /// `--max-events`: a generous bound derived from the case's size.
    pub max_events: u64,
    /// The generator's upper bound on the case's I/Os (fio requests, syncs included); a run
    /// that reports more did more than its job file allows.
    pub max_ios: u64,
    /// Test only: `--debug-drop-completion=N` on every run (0 = off).
    pub debug_drop_completion: u64,
}

impl Case {
    /// The job file's text.
    pub fn job_text(&self) -> String {
        let mut s = format!(
            "; blksim fuzz case {} (device {}, seed {})\n",
            self.index, self.device, self.seed
        );
        for sec in &self.sections {
            let _ = writeln!(s, "[{}]", sec.name);
            for (k, v) in &sec.opts {
                match v {
                    Some(v) => {
                        let _ = writeln!(s, "{k}={v}");
                    }
                    None => {
                        let _ = writeln!(s, "{k}");
                    }
                }
            }
        }
        s
    }

    /// Arguments of `blksim` (after the program name) that run this case from `jobfile`.
    pub fn run_args(&self, jobfile: &Path) -> Vec<String> {
        let mut a = vec![
            "run".to_string(),
            jobfile.display().to_string(),
            format!("--device={}", self.device),
        ];
        for (k, v) in &self.sets {
            a.push(format!("--set={k}={v}"));
        }
        a.push(format!("--seed={}", self.seed));
        a.push(format!(
            "--output-format={}",
            if self.json_plus { "json+" } else { "json" }
        ));
        a.push(format!("--max-events={}", self.max_events));
        if self.debug_drop_completion > 0 {
            a.push(format!(
                "--debug-drop-completion={}",
                self.debug_drop_completion
            ));
        }
        a
    }

    /// The one-line shell command that reproduces this case.
    pub fn command_line(&self, exe: &Path, jobfile: &Path) -> String {
        let mut s = format!(
            "BLKSIM_FAKE_TIME={FAKE_TIME} {}",
            shell_quote(&exe.display().to_string())
        );
        for a in self.run_args(jobfile) {
            s.push(' ');
            s.push_str(&shell_quote(&a));
        }
        s
    }

    /// Things the minimiser can take away: job options, `--set`s, sections.
    pub fn size(&self) -> usize {
        self.sets.len()
            + self
                .sections
                .iter()
                .map(|s| 1 + s.opts.len())
                .sum::<usize>()
    }

    /// The number of job sections (not `[global]`).
    pub fn jobs(&self) -> usize {
        self.sections.iter().filter(|s| s.name != "global").count()
    }
}

/// Quote for a POSIX shell when needed.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=./,:+%@".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_text_and_command_line() {
        let mut sec = Section::new("job0");
        sec.set("rw", Some("randread".into()));
        sec.set("time_based", None);
        sec.set("rw", Some("randwrite".into()));
        let c = Case {
            index: 3,
            seed: 9,
            device: "null_blk".into(),
            sets: vec![("queue.scheduler".into(), "bfq".into())],
            sections: vec![sec],
            json_plus: false,
            max_events: 1000,
            max_ios: 10,
            debug_drop_completion: 0,
        };
        assert!(c.job_text().ends_with("[job0]\nrw=randwrite\ntime_based\n"));
        let cmd = c.command_line(Path::new("/x/blksim"), Path::new("/t/a b.fio"));
        assert_eq!(
            cmd,
            "BLKSIM_FAKE_TIME=1795310737 /x/blksim run '/t/a b.fio' --device=null_blk --set=queue.scheduler=bfq --seed=9 --output-format=json --max-events=1000"
        );
        assert_eq!(c.size(), 4);
        assert_eq!(shell_quote("a|b"), "'a|b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
