//! The one error type of the fio front end: every failure names the file (or `<command line>`)
//! and the line (or argument index) it comes from.

use std::fmt;

/// Where the command line's errors say they come from.
pub const COMMAND_LINE: &str = "<command line>";

/// A located parse error.
///
/// Display: `job.fio:14: option 'bs': invalid size '4q' (expected ...)`, or without an option
/// `job.fio:3: unknown option 'iodepht' (did you mean 'iodepth'?)`. A `line` of 0 means the
/// error concerns the whole file (it could not be read) and is left out of the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The job file as named by the caller (or included), or [`COMMAND_LINE`].
    pub file: String,
    /// 1-based line in `file`; for the command line, the argument's index.
    pub line: usize,
    /// Canonical name of the option whose value was rejected, if any.
    pub option: Option<String>,
    pub message: String,
}

impl ParseError {
    pub fn new(file: &str, line: usize, option: Option<&str>, message: impl Into<String>) -> Self {
        ParseError {
            file: file.to_string(),
            line,
            option: option.map(str::to_string),
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line != 0 {
            write!(f, ":{}", self.line)?;
        }
        write!(f, ": ")?;
        if let Some(opt) = &self.option {
            write!(f, "option '{opt}': ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for ParseError {}
