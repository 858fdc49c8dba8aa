//! blksim-job: fio job files and fio's command line, parsed into typed [`JobSpec`]s.
//!
//! One option table (`options`) drives the job-file parser, the command-line parser and
//! `--cmdhelp`. Parsing goes raw (strings with file/line) → typed [`JobSpec`] → (in
//! blksim-sim) a simulation config.

pub mod spec;
pub use spec::*;
