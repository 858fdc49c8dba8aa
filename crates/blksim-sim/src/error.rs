//! Why a run produced no output, told by whose input is at fault: a job, the device profile,
//! or the simulation itself. Callers that answer users (the binary, the Python API) say
//! which file, line, option or `--set` value to fix without reading the message.

use blksim_job::ParseError;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// A job asks for something the simulated path cannot do (an unknown `ioscheduler`, a
    /// region past the device's end, a log or iolog that cannot be written): the job file
    /// (or the command line), its line and the option.
    Job(ParseError),
    /// The device profile, with its `--set` overrides, does not build the driver, the device,
    /// the platform or the elevator. The message starts with the origin of the value at fault
    /// (`file:line:` or `--set=KEY=VALUE:`) when one value is.
    Profile(String),
    /// The simulation: a bound it ran into (`--max-events`, the virtual clock's end, a
    /// zero-time loop), an injected fault that stopped it, an output that cannot be written,
    /// or an internal check.
    Run(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            RunError::Job(e) => e.fmt(f),
            RunError::Profile(m) | RunError::Run(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

impl From<ParseError> for RunError {
    fn from(e: ParseError) -> Self {
        RunError::Job(e)
    }
}

/// The binary and the tools print the message as it is.
impl From<RunError> for String {
    fn from(e: RunError) -> Self {
        e.to_string()
    }
}
