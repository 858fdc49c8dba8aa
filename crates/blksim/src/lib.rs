//! blksim as a library ([`api`]): the entry point the binary, the Python package and sweeps
//! call. The binary (`src/main.rs`) adds the command line and prints.

pub mod api;
pub mod explain;
