//! blksim-job: fio job files and fio's command line, parsed into typed [`JobSpec`]s.
//!
//! One option table ([`options::OPTIONS`]) drives the job-file parser ([`jobfile`]), the
//! command-line parser ([`cli`]) and `--cmdhelp` ([`options::cmdhelp`]). Parsing goes raw
//! (strings with file/line) → typed [`JobSpec`] → (in blksim-sim) a simulation config.
//!
//! ```
//! use blksim_job::{parse_job_str, Ddir};
//! let set = parse_job_str("[global]\nbs=8k,32k\n[a]\nrw=randrw\n", "job.fio", &|_| None).unwrap();
//! assert_eq!(set.jobs[0].bs[Ddir::Write.idx()].min, 32 * 1024);
//! ```

pub mod cli;
pub mod error;
pub mod jobfile;
pub mod options;
pub mod spec;
mod value;

pub use cli::{
    apply_override_pairs, apply_overrides, jobs_from_cli, parse_cli, split_cli_options, CliOption,
};
pub use error::{ParseError, COMMAND_LINE};
pub use jobfile::{
    parse_job_file, parse_job_files, parse_job_files_with, parse_job_str, parse_job_str_with,
    Keywords,
};
pub use options::{cmdhelp, find_option, suggest, OptionDesc, OPTIONS};
pub use spec::*;
