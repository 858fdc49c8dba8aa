//! The option table: one static slice of descriptors, like fio's `fio_options[]`
//! (`options.c`) or ripgrep's `FLAGS`. It drives the job-file parser ([`crate::jobfile`]), the
//! command-line parser ([`crate::cli`]) and [`cmdhelp`]; nothing else knows option names.
//!
//! Each descriptor's setter parses one value into a [`JobSpec`] and returns the message (no
//! location) on error; the callers add file and line. Setters only validate and store, like
//! ripgrep's `update`; cross-option fix-ups happen afterwards in `finalize`.
//!
//! Options fio has but a simulation can't honour are still in the table, so that real job files
//! parse: [`Support::NoMeaning`] (CPU affinity, buffers, logs...) and [`Support::NotModelled`]
//! (things that would change the workload but blksim doesn't implement yet). Both add a
//! one-line note to [`JobSpec::notes`].

use crate::spec::{
    BsSpec, BsSplit, CmdPrioSplit, CpusAllowedPolicy, Ddir, ExitWhat, IoEngine, JobSpec,
    RandomDistribution, RandomGenerator, RwPattern, SizeOrPct, TraceFormat, Zone, ZoneAbs,
    ZoneMode, REPLAY_SKIP_SYNC,
};
use crate::value::{
    parse_bool, parse_float, parse_range, parse_signed_size, parse_size, parse_size_or_pct,
    parse_time_ns, parse_uint, split_ddir, NS_PER_SEC, NS_PER_US,
};

/// Value syntax of an option, as fio's `FIO_OPT_*` types (the text is fio's `typehelp[]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptType {
    /// Free text or one of `values`.
    Str,
    /// Number with k/m/g suffix (`FIO_OPT_STR_VAL`, `FIO_OPT_ULL`).
    Size,
    /// Number with a time unit (`FIO_OPT_STR_VAL_TIME`).
    Time,
    /// `lo-hi` ranges, per direction (`FIO_OPT_RANGE`).
    Range,
    /// Integer (`FIO_OPT_INT`).
    Int,
    /// 0 or 1 (`FIO_OPT_BOOL`). A bare key means 1.
    Bool,
    /// Colon-separated floats (`FIO_OPT_FLOAT_LIST`).
    FloatList,
    /// A bare key (`FIO_OPT_STR_SET`); `=0`/`=1` also accepted.
    Flag,
    /// Text that may also be left out (`FIO_OPT_STR` whose callback takes a NULL string:
    /// `write_bw_log` alone names the log after the job). A bare key gives "".
    OptStr,
}

impl OptType {
    /// fio's `typehelp[]` text for `--cmdhelp=<opt>`.
    pub fn help(self) -> &'static str {
        match self {
            OptType::Str => "string (opt=bla)",
            OptType::Size => "string with possible k/m/g postfix (opt=4k)",
            OptType::Time => "string with time postfix (opt=10s)",
            OptType::Range => "string with dual range (opt=1k-4k,4k-8k)",
            OptType::Int => "integer value (opt=100)",
            OptType::Bool => "boolean value (opt=1)",
            OptType::FloatList => "list of floating point values separated by ':' (opt=5.9:7.8)",
            OptType::Flag => "no argument (opt)",
            OptType::OptStr => "string (opt=bla), or no argument (opt)",
        }
    }
    /// Whether a bare key (no `=value`) is meaningful: it means 1.
    pub fn bare_ok(self) -> bool {
        matches!(self, OptType::Bool | OptType::Flag | OptType::OptStr)
    }
}

/// Grouping for help output (fio's `.category`/`.group`, simplified).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Job,
    File,
    IoType,
    BlockSize,
    Size,
    Engine,
    Random,
    Timing,
    Rate,
    Sync,
    Reporting,
    Verify,
    Ignored,
}

impl Category {
    pub fn name(self) -> &'static str {
        match self {
            Category::Job => "job",
            Category::File => "file",
            Category::IoType => "I/O type",
            Category::BlockSize => "block size",
            Category::Size => "I/O size and region",
            Category::Engine => "I/O engine and depth",
            Category::Random => "random offsets",
            Category::Timing => "runtime and timing",
            Category::Rate => "rate and think time",
            Category::Sync => "sync",
            Category::Reporting => "reporting",
            Category::Verify => "verify",
            Category::Ignored => "accepted, ignored",
        }
    }
}

/// How blksim treats an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Parsed into [`JobSpec`] and honoured.
    Modelled,
    /// Accepted; means nothing for a simulated device (note added).
    NoMeaning,
    /// Accepted; would change the workload in fio, but blksim doesn't model it (note added).
    NotModelled,
}

/// Parses `value` into the spec. `value` is `"1"` for a bare boolean/flag key.
pub type Setter = fn(&mut JobSpec, &'static OptionDesc, &str) -> Result<(), String>;

/// One option: fio's `struct fio_option`, reduced to what blksim needs.
pub struct OptionDesc {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub kind: OptType,
    /// Default as fio documents it ("" = no default).
    pub default: &'static str,
    pub help: &'static str,
    pub category: Category,
    pub support: Support,
    /// Valid values and their help, for enumerated options.
    pub values: &'static [(&'static str, &'static str)],
    /// Options with higher prio are applied first within a section (fio `sort_options`:
    /// `kb_base` must be known before any size is parsed).
    pub prio: i8,
    pub set: Setter,
}

impl std::fmt::Debug for OptionDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptionDesc")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl OptionDesc {
    const fn vals(mut self, values: &'static [(&'static str, &'static str)]) -> Self {
        self.values = values;
        self
    }
    const fn prio(mut self, prio: i8) -> Self {
        self.prio = prio;
        self
    }
    /// Whether `name` is this option's name or one of its aliases.
    pub fn matches(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// A modelled option.
const fn m(
    name: &'static str,
    aliases: &'static [&'static str],
    kind: OptType,
    default: &'static str,
    category: Category,
    help: &'static str,
    set: Setter,
) -> OptionDesc {
    OptionDesc {
        name,
        aliases,
        kind,
        default,
        help,
        category,
        support: Support::Modelled,
        values: &[],
        prio: 0,
        set,
    }
}

/// An option with no meaning in a simulation: accepted with a note.
const fn ign(name: &'static str, help: &'static str) -> OptionDesc {
    OptionDesc {
        name,
        aliases: &[],
        kind: OptType::Str,
        default: "",
        help,
        category: Category::Ignored,
        support: Support::NoMeaning,
        values: &[],
        prio: 0,
        set: set_ignored,
    }
}

/// An option that changes the workload in fio but isn't modelled: accepted with a note.
const fn unm(name: &'static str, category: Category, help: &'static str) -> OptionDesc {
    OptionDesc {
        name,
        aliases: &[],
        kind: OptType::Str,
        default: "",
        help,
        category,
        support: Support::NotModelled,
        values: &[],
        prio: 0,
        set: set_ignored,
    }
}

use Category as C;
use OptType as T;

/// The table. Order is help order; lookups are linear (a few hundred string compares).
pub static OPTIONS: &[OptionDesc] = &[
    // ---- job -----------------------------------------------------------------------------
    m("name", &[], T::Str, "", C::Job, "Name of this job", set_name),
    m("description", &[], T::Str, "", C::Job, "Text job description", set_description),
    m("numjobs", &[], T::Int, "1", C::Job, "Duplicate this job this many times", set_numjobs),
    // ---- log files (fio's iolog.c / stat.c) -----------------------------------------------
    m("write_iolog", &[], T::Str, "", C::Reporting, "Store IO pattern to file", set_write_iolog),
    m("write_bw_log", &[], T::OptStr, "", C::Reporting, "Write log of bandwidth during run", set_write_bw_log),
    m("write_lat_log", &[], T::OptStr, "", C::Reporting, "Write log of latency during run", set_write_lat_log),
    m("write_iops_log", &[], T::OptStr, "", C::Reporting, "Write log of IOPS during run", set_write_iops_log),
    m("write_hist_log", &[], T::OptStr, "", C::Reporting, "Write log of latency histograms during run",
      set_write_hist_log),
    m("log_avg_msec", &[], T::Int, "0", C::Reporting, "Average bw/iops/lat logs over this period of time",
      set_log_avg_msec),
    m("log_hist_msec", &[], T::Int, "0", C::Reporting,
      "Dump completion latency histograms at frequency of this time value", set_log_hist_msec),
    m("log_hist_coarseness", &[], T::Int, "0", C::Reporting,
      "Integer in range [0,6]. Higher coarseness outputs fewer histogram bins per sample",
      set_log_hist_coarseness),
    m("log_max_value", &[], T::Bool, "0", C::Reporting, "Log max sample in a window instead of average",
      set_log_max_value),
    m("log_offset", &[], T::Bool, "0", C::Reporting, "Include offset of IO for each log entry",
      set_log_offset),
    m("log_prio", &[], T::Bool, "0", C::Reporting, "Include priority value of IO for each log entry",
      set_log_prio),
    m("per_job_logs", &[], T::Bool, "1", C::Reporting, "Include job number in generated log files or not",
      set_per_job_logs),
    m("bwavgtime", &[], T::Int, "500", C::Reporting,
      "Time window over which to calculate bandwidth (msec)", set_bwavgtime),
    m("iopsavgtime", &[], T::Int, "500", C::Reporting, "Time window over which to calculate IOPS (msec)",
      set_iopsavgtime),
    m("cpumask", &[], T::Int, "", C::Job, "CPU affinity mask", set_cpumask),
    m("cpus_allowed", &[], T::Str, "", C::Job, "Set CPUs allowed", set_cpus_allowed),
    m("cpus_allowed_policy", &[], T::Str, "shared", C::Job,
      "Distribution policy for cpus_allowed", set_cpus_allowed_policy).vals(&[
        ("shared", "Mask shared between threads"),
        ("split", "Mask split between threads"),
    ]).prio(1),
    m("stonewall", &["wait_for_previous"], T::Flag, "", C::Job,
      "Insert a hard barrier between this job and previous", set_stonewall),
    m("new_group", &[], T::Flag, "", C::Job, "Mark the start of a new group (for reporting)",
      set_new_group),
    m("thread", &[], T::Flag, "", C::Job, "Use threads instead of processes", set_thread),
    m("prio", &[], T::Int, "", C::Job, "Set job IO priority value", set_prio),
    m("prioclass", &[], T::Int, "", C::Job, "Set job IO priority class", set_prioclass),
    m("wait_for", &[], T::Str, "", C::Job, "Name of the job this one wants to wait for before starting",
      set_wait_for),
    m("exitall", &[], T::Flag, "", C::Job, "Terminate all jobs when one exits", set_exitall),
    m("exit_what", &[], T::Str, "group", C::Job, "Fine-grained control for exitall", set_exit_what)
        .vals(&EXIT_WHAT_VALUES),
    m("exitall_on_error", &[], T::Flag, "", C::Job, "Terminate all jobs when one exits in error",
      set_exitall_on_error),
    m("loops", &[], T::Int, "1", C::Job, "Number of times to run the job", set_loops),
    // ---- file ----------------------------------------------------------------------------
    // fio: prio -1, "must come after directory".
    m("filename", &[], T::Str, "", C::File, "File(s) to use for the workload", set_filename).prio(-1),
    m("directory", &[], T::Str, "", C::File, "Directory to store files in", set_directory),
    m("nrfiles", &["nr_files"], T::Int, "1", C::File, "Split job workload between this number of files",
      set_nrfiles),
    m("filesize", &[], T::Range, "", C::File, "Size of individual files", set_filesize),
    m("direct", &[], T::Bool, "0", C::File, "Use O_DIRECT IO (negates buffered)", set_direct),
    m("buffered", &[], T::Bool, "1", C::File, "Use buffered IO (negates direct)", set_buffered),
    m("ioscheduler", &[], T::Str, "", C::File, "Use this IO scheduler on the backing device",
      set_ioscheduler),
    // ---- I/O type ------------------------------------------------------------------------
    m("rw", &["readwrite"], T::Str, "read", C::IoType, "IO direction", set_rw).vals(&[
        ("read", "Sequential read"),
        ("write", "Sequential write"),
        ("trim", "Sequential trim"),
        ("randread", "Random read"),
        ("randwrite", "Random write"),
        ("randtrim", "Random trim"),
        ("rw", "Sequential read and write mix"),
        ("readwrite", "Sequential read and write mix"),
        ("randrw", "Random read and write mix"),
        ("trimwrite", "Trim and write mix, trims preceding writes"),
        ("randtrimwrite", "Randomly trim and write mix, trims preceding writes"),
    ]),
    m("rw_sequencer", &[], T::Str, "sequential", C::IoType,
      "IO offset generator modifier", set_rw_sequencer).vals(&[
        ("sequential", "Generate sequential offsets"),
        ("identical", "Generate identical offsets"),
    ]),
    m("rwmixread", &[], T::Int, "50", C::IoType,
      "Percentage of mixed workload that is reads", set_rwmixread),
    m("rwmixwrite", &[], T::Int, "50", C::IoType,
      "Percentage of mixed workload that is writes", set_rwmixwrite),
    // ---- block size ----------------------------------------------------------------------
    m("bs", &["blocksize"], T::Size, "4096", C::BlockSize, "Block size unit (read,write,trim)", set_bs),
    m("bsrange", &["blocksize_range"], T::Range, "", C::BlockSize,
      "Set block size range (in more detail than bs)", set_bsrange),
    m("bssplit", &[], T::Str, "", C::BlockSize,
      "Set a specific mix of block sizes (bs/pct:bs/pct..., per direction)", set_bssplit),
    m("ba", &["blockalign"], T::Size, "", C::BlockSize, "IO block offset alignment", set_blockalign),
    m("serialize_overlap", &[], T::Bool, "0", C::Engine,
      "Wait for in-flight IOs that collide to complete", set_serialize_overlap),
    m("bs_is_seq_rand", &[], T::Bool, "0", C::BlockSize,
      "Consider any blocksize setting to be sequential,random", set_bs_is_seq_rand),
    m("bs_unaligned", &["blocksize_unaligned"], T::Flag, "", C::BlockSize,
      "Don't sector align IO buffer sizes", set_bs_unaligned),
    // ---- size and region -----------------------------------------------------------------
    m("size", &[], T::Size, "", C::Size, "Total size of device or files (or N%)", set_size),
    m("io_size", &["io_limit"], T::Size, "", C::Size, "Total size of I/O to be performed", set_io_size),
    m("offset", &["fileoffset"], T::Size, "0", C::Size, "Start IO from this offset (or N%)", set_offset),
    m("offset_align", &[], T::Int, "0", C::Size, "Start IO from this offset alignment", set_offset_align),
    m("offset_increment", &[], T::Size, "0", C::Size,
      "What is the increment from one offset to the next (or N%)", set_offset_increment),
    m("number_ios", &[], T::Size, "0", C::Size, "Force job completion after this number of IOs",
      set_number_ios),
    // ---- engine and depth ----------------------------------------------------------------
    m("ioengine", &[], T::Str, "psync", C::Engine, "IO engine to use", set_ioengine).vals(&[
        ("sync", "Use read/write (one I/O in flight)"),
        ("psync", "Use pread/pwrite (one I/O in flight)"),
        ("vsync", "Use readv/writev (one I/O in flight)"),
        ("pvsync", "Use preadv/pwritev (one I/O in flight)"),
        ("pvsync2", "Use preadv2/pwritev2 (one I/O in flight)"),
        ("libaio", "Linux native asynchronous IO (iodepth in flight)"),
        ("io_uring", "Fast Linux native aio (iodepth in flight)"),
        ("posixaio", "POSIX asynchronous IO (iodepth in flight)"),
        ("null", "Testing engine (no I/O or transfer)"),
    ]),
    m("iodepth", &[], T::Int, "1", C::Engine, "Number of IO buffers to keep in flight", set_iodepth),
    m("iodepth_batch", &["iodepth_batch_submit"], T::Int, "1", C::Engine,
      "Number of IO buffers to submit in one go (0 = iodepth)", set_iodepth_batch_submit),
    m("iodepth_batch_complete_min", &["iodepth_batch_complete"], T::Int, "1", C::Engine,
      "Min number of IO buffers to retrieve in one go", set_iodepth_batch_complete_min),
    m("iodepth_batch_complete_max", &[], T::Int, "", C::Engine,
      "Max number of IO buffers to retrieve in one go (default = complete_min)",
      set_iodepth_batch_complete_max),
    m("iodepth_low", &[], T::Int, "", C::Engine,
      "Low water mark for queuing depth (default = iodepth)", set_iodepth_low),
    m("io_submit_mode", &[], T::Str, "inline", C::Engine, "How IO submissions and completions are done",
      set_io_submit_mode).vals(&[
        ("inline", "Submit and complete IO inline"),
        ("offload", "Offload submit and complete to threads"),
    ]),
    // ---- random --------------------------------------------------------------------------
    m("randrepeat", &[], T::Bool, "1", C::Random, "Use repeatable random IO pattern", set_randrepeat),
    m("allrandrepeat", &[], T::Bool, "0", C::Random, "Use repeatable random numbers for everything",
      set_allrandrepeat),
    m("randseed", &[], T::Size, "0x89", C::Random, "Set the random generator seed value",
      set_randseed),
    m("norandommap", &[], T::Flag, "", C::Random,
      "Accept potential duplicate random blocks", set_norandommap),
    m("random_distribution", &[], T::Str, "random", C::Random, "Random offset distribution generator",
      set_random_distribution).vals(&[
        ("random", "Completely random"),
        ("zipf", "Zipf distribution (zipf:theta[:center])"),
        ("pareto", "Pareto distribution (pareto:h[:center])"),
        ("normal", "Normal (Gaussian) distribution (normal:dev[:center])"),
        ("zoned", "Zoned random distribution (zoned:pct/range%:...)"),
        ("zoned_abs", "Zoned absolute random distribution (zoned_abs:pct/size:...)"),
    ]),
    m("percentage_random", &[], T::Int, "100,100,100", C::Random,
      "Percentage of seq/random mix that should be random", set_percentage_random),
    m("percentage_sequential", &[], T::Int, "0,0,0", C::Random,
      "Percentage of seq/random mix that should be sequential", set_percentage_sequential),
    m("random_generator", &[], T::Str, "tausworthe", C::Random, "Type of random number generator to use",
      set_random_generator).vals(&[
        ("tausworthe", "Strong Tausworthe generator"),
        ("lfsr", "Variable length LFSR"),
        ("tausworthe64", "64-bit Tausworthe variant"),
    ]),
    // ---- timing --------------------------------------------------------------------------
    m("runtime", &["timeout"], T::Time, "0", C::Timing, "Stop workload when this amount of time has passed (s)",
      set_runtime),
    m("time_based", &[], T::Flag, "", C::Timing, "Keep running until runtime/timeout is met",
      set_time_based),
    m("ramp_time", &[], T::Time, "0", C::Timing, "Ramp up time before measuring performance (s)",
      set_ramp_time),
    m("startdelay", &[], T::Time, "0", C::Timing, "Only start job when this period has passed (s, or a range)",
      set_startdelay),
    // ---- rate and think time -------------------------------------------------------------
    m("rate", &[], T::Size, "", C::Rate, "Set bandwidth rate in bytes/s (read,write,trim)", set_rate),
    m("rate_iops", &[], T::Int, "", C::Rate, "Limit IO used to this number of IO operations/sec",
      set_rate_iops),
    m("rate_process", &[], T::Str, "linear", C::Rate, "What process controls how rated IO is managed",
      set_rate_process).vals(&[
        ("linear", "Linear rate of IO"),
        ("poisson", "Rate follows Poisson process"),
    ]),
    m("thinktime", &[], T::Time, "0", C::Rate, "Idle time between IO buffers (us)", set_thinktime),
    m("thinktime_blocks", &[], T::Int, "1", C::Rate, "IO buffer period between 'thinktime'",
      set_thinktime_blocks),
    m("thinktime_iotime", &[], T::Time, "0", C::Rate, "IO time interval between 'thinktime'",
      set_thinktime_iotime),
    m("rate_ignore_thinktime", &[], T::Bool, "0", C::Rate, "Rated IO ignores thinktime settings",
      set_rate_ignore_thinktime),
    // ---- sync ----------------------------------------------------------------------------
    m("fsync", &[], T::Int, "0", C::Sync, "Issue fsync for writes every given number of blocks", set_fsync),
    m("fdatasync", &[], T::Int, "0", C::Sync, "Issue fdatasync for writes every given number of blocks",
      set_fdatasync),
    m("end_fsync", &[], T::Bool, "0", C::Sync, "Include fsync at the end of job", set_end_fsync),
    // ---- reporting -----------------------------------------------------------------------
    m("group_reporting", &[], T::Flag, "", C::Reporting, "Do reporting on a per-group basis",
      set_group_reporting),
    m("kb_base", &[], T::Int, "1024", C::Reporting, "Unit prefix interpretation (1000 or 1024)",
      set_kb_base).prio(1).vals(&[
        ("1024", "Inputs invert IEC and SI prefixes (for compatibility); outputs prefer binary"),
        ("1000", "Inputs use IEC and SI prefixes; outputs prefer SI"),
    ]),
    m("unit_base", &[], T::Int, "0", C::Reporting, "Bit multiple of result summary data (8 for byte, 1 for bit)",
      set_unit_base).vals(&[
        ("0", "Auto-detect"),
        ("8", "Normal (byte based)"),
        ("1", "Bit based"),
    ]).prio(1),
    m("unified_rw_reporting", &[], T::Str, "none", C::Reporting,
      "Unify reporting across data direction", set_unified_rw_reporting).vals(&[
        ("none", "Normal statistics reporting"),
        ("mixed", "Statistics are summed per data direction and reported together"),
        ("both", "Statistics are reported normally, followed by the mixed statistics"),
        ("0", "Same as none"),
        ("1", "Same as mixed"),
        ("2", "Same as both"),
    ]),
    m("gtod_reduce", &[], T::Bool, "0", C::Reporting, "Greatly reduce number of gettimeofday() calls",
      set_gtod_reduce),
    m("clat_percentiles", &[], T::Bool, "1", C::Reporting, "Enable the reporting of completion latency percentiles",
      set_clat_percentiles),
    m("lat_percentiles", &[], T::Bool, "0", C::Reporting, "Enable the reporting of IO latency percentiles",
      set_lat_percentiles),
    m("slat_percentiles", &[], T::Bool, "0", C::Reporting, "Enable the reporting of submission latency percentiles",
      set_slat_percentiles),
    m("percentile_list", &[], T::FloatList,
      "1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99", C::Reporting,
      "Specify a custom list of percentiles to report for completion latency and block errors",
      set_percentile_list),
    // ---- verify --------------------------------------------------------------------------
    m("verify", &[], T::Str, "0", C::Verify, "Verify data written", set_verify).vals(&VERIFY_VALUES),
    m("do_verify", &[], T::Bool, "1", C::Verify, "Run verification stage after write", set_do_verify),
    m("verify_backlog", &[], T::Size, "", C::Verify, "Verify after this number of blocks are written", set_verify_backlog),
    m("verify_backlog_batch", &[], T::Int, "", C::Verify, "Verify this number of IO blocks", set_verify_backlog_batch),
    // ---- accepted, not modelled (would change the workload in fio) ------------------------
    m("zonemode", &[], T::Str, "none", C::Size, "Mode for the zonesize, zonerange and zoneskip parameters (none or strided; zbd is an error)",
      set_zonemode),
    m("zonesize", &[], T::Int, "0", C::Size, "Amount of data to read per zone", set_zonesize),
    m("zonerange", &[], T::Int, "0", C::Size, "Give size of an IO zone", set_zonerange),
    m("zoneskip", &[], T::Int, "0", C::Size, "Space between IO zones", set_zoneskip),
    unm("zonecapacity", C::Size, "Capacity per zone"),
    unm("file_service_type", C::File, "How to select which file to service next (only roundrobin is modelled)")
        .with_set(set_file_service_type),
    unm("fill_device", C::Size, "Write until an ENOSPC error occurs"),
    unm("fill_fs", C::Size, "Write until an ENOSPC error occurs"),
    unm("ramp_size", C::Timing, "Amount of data to ramp up before measuring"),
    unm("flow", C::Rate, "Weight for flow control of this job"),
    unm("flow_id", C::Rate, "The flow index ID to use"),
    unm("flow_watermark", C::Rate, "High watermark for flow control"),
    unm("flow_sleep", C::Rate, "How many microseconds to sleep after being held back by the flow control mechanism"),
    m("latency_target", &[], T::Time, "", C::Rate, "Ramp to max queue depth supporting this latency",
      set_latency_target),
    m("latency_window", &[], T::Time, "", C::Rate, "Time to sustain latency_target", set_latency_window),
    m("latency_percentile", &[], T::FloatList, "100", C::Rate, "Percentile of IOs must be below latency_target",
      set_latency_percentile),
    m("latency_run", &[], T::Bool, "0", C::Rate, "Keep adjusting queue depth to match latency_target",
      set_latency_run),
    m("max_latency", &[], T::Time, "", C::Rate, "Maximum tolerated IO latency (usec)", set_max_latency),
    m("rate_min", &["ratemin"], T::Size, "", C::Rate, "Job must meet this rate or it will be shutdown",
      set_rate_min),
    m("rate_iops_min", &[], T::Int, "", C::Rate, "Job must meet this rate or it will be shut down",
      set_rate_iops_min),
    m("rate_cycle", &["ratecycle"], T::Int, "1000", C::Rate, "Window average for rate limits (msec)",
      set_rate_cycle),
    m("thinktime_spin", &[], T::Time, "0", C::Rate, "Start think time by spinning this amount (usec)",
      set_thinktime_spin),
    m("thinktime_blocks_type", &[], T::Str, "complete", C::Rate, "How thinktime_blocks takes effect",
      set_thinktime_blocks_type).vals(&[
        ("complete", "thinktime_blocks takes effect at the completion side"),
        ("issue", "thinktime_blocks takes effect at the issue side"),
    ]),
    unm("random_sequence_stride", C::Random, "Stride for the 'sequence' random distribution"),
    m("sync", &[], T::Str, "none", C::Sync, "Use synchronous write IO (O_SYNC/O_DSYNC)", set_sync)
        .vals(&[
            ("none", "No O_SYNC/O_DSYNC (also 0)"),
            ("0", "Same as none"),
            ("sync", "O_SYNC: FUA writes, and a flush after each write of a synchronous engine (also 1)"),
            ("1", "Same as sync"),
            ("dsync", "O_DSYNC: on a block device the same as sync"),
        ]),
    unm("write_barrier", C::Sync, "Make every Nth write a barrier write"),
    unm("sync_file_range", C::Sync, "Use sync_file_range()"),
    unm("fsync_on_close", C::Sync, "fsync files on close"),
    m("read_iolog", &[], T::Str, "", C::IoType, "Playback IO pattern from file", set_read_iolog),
    m("read_iolog_chunked", &[], T::Bool, "0", C::IoType,
      "Parse IO pattern in chunks", set_read_iolog_chunked),
    m("replay_no_stall", &[], T::Bool, "0", C::IoType,
      "Playback IO pattern file as fast as possible without stalls", set_replay_no_stall),
    m("replay_redirect", &[], T::Str, "", C::IoType,
      "Replay all I/O onto this device, regardless of trace device", set_replay_redirect),
    m("replay_scale", &[], T::Int, "1", C::IoType, "Scale offset down by this factor", set_replay_scale),
    m("replay_align", &[], T::Int, "0", C::IoType, "Align offsets to this blocksize", set_replay_align),
    m("replay_time_scale", &[], T::Int, "100", C::IoType, "Scale time for replay events",
      set_replay_time_scale),
    m("read_iolog_format", &[], T::Str, "auto", C::IoType,
      "Trace format: auto, fio, blktrace, blkparse, msr, alibaba, tencent, ascii (blksim only)",
      set_read_iolog_format),
    m("replay_device", &[], T::Str, "", C::IoType,
      "Replay only this device, disk or volume: a number, or major,minor (blksim only)",
      set_replay_device),
    m("replay_skip_bad", &[], T::Bool, "0", C::IoType,
      "Pass over malformed trace lines, counting them (blksim only)", set_replay_skip_bad),
    m("replay_skip", &[], T::Str, "", C::IoType, "Skip certain IO types (read,write,trim,flush)",
      set_replay_skip),
    m("merge_blktrace_file", &[], T::Str, "", C::IoType, "Merged blktrace output filename",
      set_merge_blktrace_file),
    m("merge_blktrace_scalars", &[], T::Str, "", C::IoType,
      "Percentage to scale each trace", set_merge_blktrace_scalars),
    m("merge_blktrace_iters", &[], T::Str, "", C::IoType,
      "Number of iterations per trace", set_merge_blktrace_iters),
    unm("verify_only", C::Verify, "Verifies previously written data is still valid"),
    unm("trim_percentage", C::Verify, "Number of verify blocks to trim (i.e., discard)"),
    unm("trim_verify_zero", C::Verify, "Verify that trimmed (i.e., discarded) blocks are returned as zeroes"),
    unm("trim_backlog", C::Verify, "Trim after this number of blocks are written"),
    unm("trim_backlog_batch", C::Verify, "Trim this number of IO blocks"),
    m("disable_lat", &[], T::Bool, "0", C::Reporting, "Disable latency numbers", set_disable_lat),
    m("disable_clat", &[], T::Bool, "0", C::Reporting, "Disable completion latency numbers",
      set_disable_clat),
    m("disable_slat", &[], T::Bool, "0", C::Reporting, "Disable submission latency numbers",
      set_disable_slat),
    m("disable_bw_measurement", &["disable_bw"], T::Bool, "0", C::Reporting, "Disable bandwidth logging",
      set_disable_bw),
    m("significant_figures", &[], T::Int, "4", C::Reporting,
      "Significant figures for output-format set to normal", set_significant_figures),
    m("stats", &[], T::Bool, "1", C::Reporting, "Enable collection of stats", set_stats),
    m("steadystate", &["ss"], T::Str, "iops_slope:0.01%", C::Timing,
      "Define the criterion and limit to judge when a job has reached steady state", set_steadystate)
        .vals(&[
            ("iops", "maximum mean deviation of IOPS measurements"),
            ("iops_slope", "slope calculated from IOPS measurements"),
            ("bw", "maximum mean deviation of bandwidth measurements"),
            ("bw_slope", "slope calculated from bandwidth measurements"),
        ]),
    m("steadystate_duration", &["ss_dur"], T::Time, "0", C::Timing,
      "Stop workload upon attaining steady state for specified duration", set_steadystate_duration),
    m("steadystate_ramp_time", &["ss_ramp"], T::Time, "0", C::Timing,
      "Delay before initiation of data collection for steady state job termination testing",
      set_steadystate_ramp_time),
    m("ignore_error", &[], T::Str, "", C::Job, "Set a specific list of errors to ignore", set_ignore_error),
    m("continue_on_error", &[], T::Str, "none", C::Job, "Continue on non-fatal errors during IO", set_continue_on_error)
        .vals(&[
            ("none", "Exit when an error is encountered"),
            ("read", "Continue on read errors only"),
            ("write", "Continue on write errors only"),
            ("io", "Continue on any IO errors"),
            ("verify", "Continue on verify errors only"),
            ("all", "Continue on all io and verify errors"),
            ("0", "Alias for 'none'"),
            ("1", "Alias for 'all'"),
        ]),
    unm("error_dump", C::Job, "Dump info on each error"),
    unm("skip_bad", C::Job, "Skip operations against known bad blocks (mtd engine)"),
    m("hipri", &[], T::Flag, "", C::Engine, "Use polled IO completions (io_uring/pvsync2)", set_hipri),
    m("fixedbufs", &[], T::Flag, "", C::Engine, "Pre map IO buffers (io_uring)", set_fixedbufs),
    m("registerfiles", &[], T::Flag, "", C::Engine, "Pre-open/register files (io_uring)", set_registerfiles),
    m("sqthread_poll", &[], T::Flag, "", C::Engine, "Offload submission/completion to kernel thread (io_uring)", set_sqthread_poll),
    m("sqthread_poll_cpu", &[], T::Int, "", C::Engine, "What CPU to run SQ thread polling on (io_uring)", set_sqthread_poll_cpu),
    unm("nonvectored", C::Engine, "Use non-vectored read/write commands (io_uring)"),
    unm("uncached", C::Engine, "Use RWF_UNCACHED for buffered read/writes (io_uring/pvsync2)"),
    unm("nowait", C::Engine, "Use RWF_NOWAIT for reads/writes"),
    unm("userspace_reap", C::Engine, "Use alternative user-space reap implementation (libaio)"),
    m("cmdprio_percentage", &[], T::Int, "", C::Engine, "Send high priority I/O this percentage of the time",
      set_cmdprio_percentage),
    m("cmdprio_class", &[], T::Int, "", C::Engine, "Set asynchronous IO priority class", set_cmdprio_class),
    m("cmdprio", &[], T::Int, "", C::Engine, "Set asynchronous IO priority level", set_cmdprio),
    m("cmdprio_bssplit", &[], T::Str, "", C::Engine, "Set priority percentages for different block sizes",
      set_cmdprio_bssplit),
    unm("priohint", C::Job, "Set job IO priority hint"),
    unm("atomic", C::File, "Use atomic writes (O_DIRECT + RWF_ATOMIC)"),
    unm("block_error_percentiles", C::Reporting, "Record trim block errors and make a histogram"),
    // ---- accepted, no meaning in a simulation ---------------------------------------------
    ign("numa_cpu_nodes", "NUMA CPU nodes bind"),
    ign("numa_mem_policy", "NUMA memory policy setup"),
    ign("invalidate", "Invalidate buffer/page cache prior to running job"),
    ign("nice", "Set job CPU nice value"),
    ign("iomem", "Backing type for IO buffers"),
    ign("mem", "Backing type for IO buffers"),
    ign("iomem_align", "IO memory buffer offset alignment"),
    ign("mem_align", "IO memory buffer offset alignment"),
    ign("hugepage-size", "When using hugepages, specify size of each page"),
    ign("buffer_compress_percentage", "How compressible the buffer is (approximately)"),
    ign("buffer_compress_chunk", "Size of compressible region in buffer"),
    ign("compress_percentage", "How compressible the buffer is (approximately)"),
    ign("compress_chunk", "Size of compressible region in buffer"),
    ign("buffer_pattern", "Fill pattern for IO buffers"),
    ign("refill_buffers", "Refill IO buffers on every IO submit"),
    ign("scramble_buffers", "Slightly scramble buffers on every IO submit"),
    ign("zero_buffers", "Init IO buffers to all zeroes"),
    ign("dedupe_percentage", "Percentage of buffers that are dedupable"),
    ign("dedupe_mode", "Mode for the deduplication buffer generation"),
    ign("dedupe_working_set_percentage", "Dedupe working set size in percentages from file or device size"),
    ign("disk_util", "Log disk utilization statistics"),
    ign("log_issue_time", "Include issue time of IO for each log entry"),
    ign("log_compression", "Log in compressed chunks of this size"),
    ign("log_compression_cpus", "Limit log compression to these CPUs"),
    ign("log_store_compressed", "Store logs in a compressed format"),
    ign("log_unix_epoch", "Use Unix time in log files"),
    ign("log_alternate_epoch", "Use alternate epoch time in log files"),
    ign("log_alternate_epoch_clock_id", "If log_alternate_epoch is true, this option specifies the clock_id"),
    ign("log_entries", "Initial number of entries in a job IO log"),
    ign("lockmem", "Lock down this amount of memory (per worker)"),
    ign("create_serialize", "Serialize creation of job files"),
    ign("create_fsync", "fsync file after creation"),
    ign("create_on_open", "Create files when they are opened for IO"),
    ign("create_only", "Only perform file creation phase"),
    ign("allow_file_create", "Permit fio to create files, if they don't exist"),
    ign("allow_mounted_write", "Allow writes to a mounted partition"),
    ign("pre_read", "Pre-read files before starting official testing"),
    ign("fallocate", "Whether pre-allocation is performed when laying out files"),
    ign("overwrite", "When writing, set whether to overwrite current data"),
    ign("unlink", "Unlink created files after job has completed"),
    ign("unlink_each_loop", "Unlink created files after each loop in a job has completed"),
    ign("lockfile", "Lock file when doing IO to it").prio(1),
    ign("fadvise_hint", "Use fadvise() to advise the kernel on IO pattern"),
    ign("fadvise_stream", "Use fadvise() to set stream ID"),
    ign("filename_format", "Override default $jobname.$jobnum.$filenum naming").prio(-1),
    ign("unique_filename", "For network clients, prefix file with source IP"),
    ign("opendir", "Recursively add files from this directory and down"),
    ign("openfiles", "Number of files to keep open at the same time"),
    ign("file_append", "IO will start at the end of the file(s)"),
    ign("clocksource", "What type of timing source to use"),
    ign("gtod_cpu", "Set up dedicated gettimeofday() thread on this CPU"),
    ign("cpuload", "Use this percentage of CPU (cpuio engine)"),
    ign("cpuchunks", "Length of the CPU burn cycles (usecs, cpuio engine)"),
    ign("cpumode", "How to load the CPU (cpuio engine)"),
    ign("uid", "Run job with this user ID"),
    ign("gid", "Run job with this group ID"),
    ign("cgroup", "Add job to cgroup of this name"),
    ign("cgroup_weight", "Use given weight for cgroup"),
    ign("cgroup_nodelete", "Do not delete cgroups after job completion"),
    ign("exec_prerun", "Execute this file prior to running job"),
    ign("exec_postrun", "Execute this file after running job"),
    ign("verify_pattern", "Fill pattern for IO buffers"),
    ign("verify_interval", "Store verify buffer header every N bytes"),
    ign("verify_offset", "Offset verify header location by N bytes"),
    ign("verify_fatal", "Exit on a single verify failure, don't continue"),
    ign("verify_dump", "Dump contents of good and bad blocks on failure"),
    ign("verify_async", "Number of async verifier threads to use"),
    ign("verify_async_cpus", "Set CPUs allowed for async verify threads"),
    ign("verify_state_save", "Save verify state on termination"),
    ign("verify_state_load", "Load verify state on start"),
    ign("verify_header_seed", "Verify the header seed used to generate the buffer contents"),
    ign("verify_write_sequence", "Verify header write sequence number"),
    ign("experimental_verify", "Enable experimental verification"),
    ign("ioscheduler_set", "Whether fio may set the device's I/O scheduler"),
    ign("exitall_error", "Terminate all jobs when one exits in error"),
    ign("daemonize", "Run fio in the background"),
    ign("dedupe_global", "Share deduplication buffers across jobs"),
    ign("softrandommap", "Set norandommap if randommap allocation fails (blksim's map never fails)"),
    ign("write_hint", "Set expected write life time"),
    // Only meaningful with `zonemode=zbd`, which blksim refuses.
    ign("max_open_zones", "Limit on the number of simultaneously opened sequential write zones with zonemode=zbd"),
    ign("job_max_open_zones", "Limit on the number of simultaneously opened sequential write zones with zonemode=zbd by one thread/process"),
    ign("ignore_zone_limits", "Ignore the zone resource limits (max open/active zones) reported by the device"),
    ign("zone_reset_threshold", "Zoned block device reset threshold"),
    ign("zone_reset_frequency", "Zoned block device zone reset frequency in HZ"),
    ign("read_beyond_wp", "Allow reads beyond the zone write pointer"),
    // fio 3.33 warns "Option X is deprecated" and goes on (FIO_OPT_SOFT_DEPRECATED), or
    // fails the job (FIO_OPT_DEPRECATED).
    dep("verifysort", true),
    dep("verifysort_nr", true),
    dep("rwmixcycle", false),
    // fio's builtin profiles register their options in every job's table
    // (`profiles/tiobench.c`, `profiles/act.c`), so fio takes them in any job and they
    // change nothing there. A job's `profile=` is stored and never read; only the command
    // line's `--profile` runs a builtin test (refused by the binary).
    ign("block", "Block size to use (fio's tiobench profile)"),
    ign("numruns", "Number of runs (fio's tiobench profile)"),
    ign("dir", "Test directory (fio's tiobench profile)"),
    ign("threads", "Number of threads (fio's tiobench profile)"),
    ign("device-names", "Devices to use (fio's act profile)"),
    ign("load", "ACT load multiplier (default 1x) (fio's act profile)"),
    ign("test-duration", "How long to run ACT for (fio's act profile)"),
    ign("threads-per-queue", "Number of read I/O threads per device (fio's act profile)"),
    ign("read-req-num-512-blocks", "Number of 512B blocks to read at the time (fio's act profile)"),
    ign("large-block-op-kbytes", "Size of large block ops in KiB (writes) (fio's act profile)"),
    ign("prep", "Set to run ACT prep phase (fio's act profile)"),
    ign("profile", "Select a specific builtin performance test (read only on fio's command line)"),
];

/// A deprecated fio option: `soft` ones fio warns about and ignores, the others fail.
const fn dep(name: &'static str, soft: bool) -> OptionDesc {
    OptionDesc {
        name,
        aliases: &[],
        kind: OptType::Str,
        default: "",
        help: "Deprecated",
        category: Category::Ignored,
        support: Support::NoMeaning,
        values: &[],
        prio: 0,
        set: if soft {
            set_soft_deprecated
        } else {
            set_deprecated
        },
    }
}

fn set_soft_deprecated(j: &mut JobSpec, o: &'static OptionDesc, _v: &str) -> Result<(), String> {
    add_note(
        j,
        format!(
            "note: option '{}' is deprecated and has no meaning in a simulation; ignored, as fio 3.33 does",
            o.name
        ),
    );
    Ok(())
}

fn set_deprecated(_: &mut JobSpec, _: &'static OptionDesc, _v: &str) -> Result<(), String> {
    Err("deprecated: fio 3.33 fails to parse it; remove it".into())
}

const VERIFY_VALUES: [(&str, &str); 19] = [
    ("0", "Don't do IO verification"),
    ("md5", "Use md5 checksums for verification"),
    ("crc64", "Use crc64 checksums for verification"),
    ("crc32", "Use crc32 checksums for verification"),
    (
        "crc32c-intel",
        "Use crc32c checksums for verification (hw assisted, if available)",
    ),
    (
        "crc32c",
        "Use crc32c checksums for verification (hw assisted, if available)",
    ),
    ("crc16", "Use crc16 checksums for verification"),
    ("crc7", "Use crc7 checksums for verification"),
    ("sha1", "Use sha1 checksums for verification"),
    ("sha256", "Use sha256 checksums for verification"),
    ("sha512", "Use sha512 checksums for verification"),
    ("sha3-224", "Use sha3-224 checksums for verification"),
    ("sha3-256", "Use sha3-256 checksums for verification"),
    ("sha3-384", "Use sha3-384 checksums for verification"),
    ("sha3-512", "Use sha3-512 checksums for verification"),
    ("xxhash", "Use xxhash checksums for verification"),
    ("meta", "Use io_u meta data for verification"),
    ("pattern", "Verify strict pattern"),
    ("null", "Pretend to verify"),
];

impl OptionDesc {
    const fn with_set(mut self, set: Setter) -> Self {
        self.set = set;
        self
    }
}

/// All options, in table order.
pub fn options() -> &'static [OptionDesc] {
    OPTIONS
}

/// Look an option up by name or alias (case-sensitive, as fio's `o_match`).
pub fn find_option(name: &str) -> Option<&'static OptionDesc> {
    OPTIONS.iter().find(|o| o.matches(name))
}

/// The known option name (or alias) nearest to `name`, if it is close enough to be a likely
/// typo: optimal-string-alignment distance (a transposition counts 1) of at most half the
/// length, fio's `string_distance_ok` threshold. Names are compared in lower case (fio's
/// names are all lower case, so `BS` suggests `bs`). Ties go to the first in table order.
pub fn suggest(name: &str) -> Option<&'static str> {
    let len = name.chars().count();
    if len == 0 || len > 64 {
        return None;
    }
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &'static str)> = None;
    for o in OPTIONS {
        for cand in std::iter::once(&o.name).chain(o.aliases.iter()) {
            let d = osa_distance(&lower, cand);
            if best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, cand));
            }
        }
    }
    best.filter(|&(d, _)| d <= len.div_ceil(2)).map(|(_, n)| n)
}

/// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
fn osa_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

/// "unknown option 'x'" plus a suggestion when there is a close one.
pub(crate) fn unknown_option_message(name: &str) -> String {
    match suggest(name) {
        Some(s) => format!("unknown option '{name}' (did you mean '{s}'?)"),
        None => format!("unknown option '{name}'"),
    }
}

/// Apply one option to a spec. `value` None = the key was given bare.
pub(crate) fn apply_option(
    spec: &mut JobSpec,
    opt: &'static OptionDesc,
    value: Option<&str>,
) -> Result<(), String> {
    let v = match value {
        Some(v) => v,
        None if opt.kind == OptType::OptStr => "",
        None if opt.kind.bare_ok() || opt.support != Support::Modelled => "1",
        None => return Err(format!("requires a value ({})", opt.kind.help())),
    };
    (opt.set)(spec, opt, v)
}

/// Options that belong to engines, with the engines that have them (fio's per-engine
/// `options[]` tables: `engines/io_uring.c`, and `engines/sync.c` for pvsync2's `hipri`). fio
/// parses an engine's options only once that engine is loaded and refuses them under another.
const ENGINE_OPTIONS: &[(&str, &[&str])] = &[
    ("hipri", &["io_uring", "pvsync2"]),
    ("fixedbufs", &["io_uring"]),
    ("registerfiles", &["io_uring"]),
    ("sqthread_poll", &["io_uring"]),
    ("sqthread_poll_cpu", &["io_uring"]),
    ("cmdprio_percentage", &["libaio", "io_uring"]),
    ("cmdprio_class", &["libaio", "io_uring"]),
    ("cmdprio", &["libaio", "io_uring"]),
    ("cmdprio_bssplit", &["libaio", "io_uring"]),
];

/// A job that loads another engine than `[global]`'s drops the engine options it inherited
/// from there: fio's `ioengine_load` frees the old engine's option block with the engine.
pub(crate) fn drop_inherited_engine_options(job: &mut JobSpec, global: &JobSpec) {
    if job.ioengine == global.ioengine {
        return;
    }
    for (o, engines) in ENGINE_OPTIONS {
        if engines.contains(&job.ioengine.name()) || job.where_set(o).is_none() {
            continue;
        }
        if job.where_set(o) == global.where_set(o) {
            job.unmark_set(o);
            match *o {
                "hipri" => job.hipri = false,
                o if o.starts_with("cmdprio") => job.cmdprio = Default::default(),
                _ => job.io_uring = Default::default(),
            }
        }
    }
}

/// `fixup_options`: a byte rate and an IOPS rate together are an error ("fio: rate and
/// rate_iops are mutually exclusive"), in any directions.
pub(crate) fn check_rate_options(spec: &JobSpec) -> Result<(), crate::ParseError> {
    if spec.rate.iter().any(|&r| r > 0) && spec.rate_iops.iter().any(|&r| r > 0) {
        return Err(spec.error_at(
            &["rate_iops", "rate"],
            "rate and rate_iops are mutually exclusive (fio refuses the job)",
        ));
    }
    // `handle_thinktime` sleeps what is left of the think time after the spin, which
    // `usec_spin` always overruns a little: from a spin as long as the think time on, the
    // rest is negative and fio 3.33 sleeps it as an unsigned number, until the job is
    // stopped (a 2 ms spin of a 2 ms think time ran 29 I/Os in a 1 s job).
    if spec.thinktime_ns > 0 && spec.thinktime_spin_ns >= spec.thinktime_ns {
        return Err(spec.error_at(
            &["thinktime_spin", "thinktime"],
            "thinktime_spin must be below thinktime: fio 3.33 would sleep the negative rest \
             as an unsigned number, until the job is stopped",
        ));
    }
    // The same check for the minimums, with the same message.
    if spec.rate_min.iter().any(|&r| r > 0) && spec.rate_iops_min.iter().any(|&r| r > 0) {
        return Err(spec.error_at(
            &["rate_iops_min", "rate_min"],
            "rate and rate_iops are mutually exclusive (fio refuses the job: rate_min and rate_iops_min)",
        ));
    }
    for d in 0..3 {
        let over = |rate: u64, min: u64| rate > 0 && rate < min;
        if over(spec.rate[d], spec.rate_min[d]) || over(spec.rate_iops[d], spec.rate_iops_min[d]) {
            return Err(spec.error_at(
                &["rate_min", "rate_iops_min", "rate", "rate_iops"],
                format!("minimum rate exceeds rate, ddir {d} (fio refuses the job)"),
            ));
        }
    }
    // The zone options' own checks in `fixup_options`.
    if spec.zonemode == ZoneMode::None && spec.zonesize > 0 {
        return Err(spec.error_at(
            &["zonesize", "zonemode"],
            "--zonemode=none and --zonesize are not compatible (fio refuses the job)",
        ));
    }
    if spec.zonemode == ZoneMode::Strided && spec.zonesize == 0 {
        return Err(spec.error_at(
            &["zonemode"],
            "--zonesize must be specified when using --zonemode=strided",
        ));
    }
    Ok(())
}

/// An engine option under an engine that lacks it is fio's "Bad option", at its line.
pub(crate) fn check_engine_options(spec: &JobSpec) -> Result<(), crate::ParseError> {
    for (o, engines) in ENGINE_OPTIONS {
        if spec.where_set(o).is_some() && !engines.contains(&spec.ioengine.name()) {
            return Err(spec.error_at(
                &[o],
                format!(
                    "'{o}' is an option of ioengine={}, not of ioengine={} (fio: \"Bad option <{o}>\")",
                    engines.join(" or ioengine="),
                    spec.ioengine.name()
                ),
            ));
        }
    }
    check_cmdprio(spec)
}

/// `fio_cmdprio_init`'s checks, which fail the engine's setup: `cmdprio_percentage` and
/// `cmdprio_bssplit` together, and one block size's percentages over 100
/// (`fio_cmdprio_fill_bsprio`).
fn check_cmdprio(spec: &JobSpec) -> Result<(), crate::ParseError> {
    let c = &spec.cmdprio;
    if c.bssplit.is_some() && c.percentage.iter().any(|&p| p > 0) {
        return Err(spec.error_at(
            &["cmdprio_bssplit", "cmdprio_percentage"],
            "cmdprio_percentage and cmdprio_bssplit options are mutually exclusive (fio refuses the job)",
        ));
    }
    for d in 0..2 {
        for b in c.table(d, true) {
            let total: u32 = b.prios.iter().map(|p| p.0).sum();
            if total > 100 {
                return Err(spec.error_at(
                    &["cmdprio_bssplit"],
                    format!(
                        "cmdprio_bssplit total percentage for bs: {} exceeds 100 (fio refuses the job)",
                        b.bs.unwrap_or(0)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The note for a job with both `read_iolog` and `write_iolog`.
pub const READ_IOLOG_WRITE_NOTE: &str = "note: fio 3.33 writes no write_iolog for a job with read_iolog (\"fio: read iolog overrides write_iolog\"); blksim writes it, with the replayed I/O's simulated times";

/// Cross-option fix-ups after a job's options are all applied (fio `fixup_options` in
/// init.c, reduced to what the spec needs). Safe to call again after overrides.
pub(crate) fn finalize(spec: &mut JobSpec) {
    // fio prints this from backend.c when a sync engine meets iodepth > 1; we keep the
    // configured iodepth (it is printed in the job header) and note the cap.
    const SYNC_NOTE: &str = "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1";
    spec.notes.retain(|n| n != SYNC_NOTE);
    if spec.ioengine.is_sync() && spec.iodepth > 1 && !spec.io_submit_offload {
        spec.notes.push(SYNC_NOTE.to_string());
    }
    // `fixup_options`: "if (!o->timeout && o->time_based)" fio says so and runs the job by
    // its size. Kept as asked, so that a runtime given later (an override) still applies.
    const TIME_BASED_NOTE: &str = "fio: time_based requires a runtime/timeout setting";
    spec.notes.retain(|n| n != TIME_BASED_NOTE);
    spec.time_based = spec.time_based_asked && spec.runtime_ns > 0;
    if spec.time_based_asked && spec.runtime_ns == 0 {
        spec.notes.push(TIME_BASED_NOTE.to_string());
    }
    // `fixup_options`: no percentiles of a latency that is not kept.
    if spec.disable_lat {
        spec.lat_percentiles = false;
    }
    if spec.disable_clat {
        spec.clat_percentiles = false;
    }
    if spec.disable_slat {
        spec.slat_percentiles = false;
    }
    // `fixup_options`: fio drops a replaying job's write_iolog ("fio: read iolog overrides
    // write_iolog"). blksim writes it: the replayed I/O with its simulated times.
    if spec.write_iolog.is_some() && spec.replay.file.is_some() {
        add_note(spec, READ_IOLOG_WRITE_NOTE.to_string());
    }
}

// ---------------------------------------------------------------------------------------------
// Setters. Each validates its value and stores it; the message says what was expected.

/// Add a note once (jobs inherit global notes, and an option may be repeated).
pub(crate) fn add_note(spec: &mut JobSpec, note: String) {
    if !spec.notes.contains(&note) {
        spec.notes.push(note);
    }
}

fn set_ignored(j: &mut JobSpec, o: &'static OptionDesc, _v: &str) -> Result<(), String> {
    let note = match o.support {
        Support::NoMeaning => format!(
            "note: option '{}' has no meaning in a simulation; ignored",
            o.name
        ),
        _ => format!(
            "note: option '{}' is not modelled by blksim; ignored",
            o.name
        ),
    };
    add_note(j, note);
    Ok(())
}

fn nonempty(v: &str) -> Result<&str, String> {
    let t = v.trim();
    if t.is_empty() {
        Err("missing value".into())
    } else {
        Ok(t)
    }
}

fn invalid_choice(v: &str, o: &OptionDesc) -> String {
    let valid: Vec<&str> = o.values.iter().map(|(n, _)| *n).collect();
    format!("invalid value '{}' (valid: {})", v.trim(), valid.join(", "))
}

fn u32_of(v: &str, kb: u32, min: u64, max: u64) -> Result<u32, String> {
    let n = parse_uint(v, kb, max.min(u64::from(u32::MAX)))?;
    if n < min {
        return Err(format!("value {n} out of range (min {min})"));
    }
    Ok(n as u32)
}

/// Apply `f` to each direction named by a `read,write,trim` list.
fn each_ddir(v: &str, mut f: impl FnMut(usize, &str) -> Result<(), String>) -> Result<(), String> {
    let parts = split_ddir(v)?;
    for (d, p) in parts.iter().enumerate() {
        if let Some(p) = p {
            f(d, p)?;
        }
    }
    Ok(())
}

const DDIR_NAMES: [&str; 3] = ["reads", "writes", "trims"];

/// Upper bound on queue depths and batch sizes: a sanity limit for the simulator (fio's
/// limit is UINT_MAX); 65536 is far above any device queue.
const MAX_DEPTH: u64 = 65_536;

fn set_name(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.name = nonempty(v)?.to_string();
    Ok(())
}

fn set_description(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.description = Some(v.trim().to_string());
    Ok(())
}

/// `read_iolog`: a fio iolog to replay (version 2 or 3).
fn set_read_iolog(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let v = v.trim();
    if v.is_empty() {
        return Err("needs a file name".into());
    }
    j.replay.file = Some(v.to_string());
    Ok(())
}

/// fio reads a trace in chunks with it, all at once without; blksim always reads a record
/// at a time, so either value replays the same.
fn set_read_iolog_chunked(_: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    parse_bool(v).map(|_| ())
}

fn set_replay_no_stall(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.replay.no_stall = parse_bool(v)?;
    Ok(())
}

/// One simulated device takes every I/O of the log whatever file it names: accepted.
fn set_replay_redirect(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.replay.redirect = Some(v.trim().to_string());
    Ok(())
}

/// fio's `str_replay_skip_cb`: a comma list of read, write, trim, sync.
fn set_replay_skip(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let mut mask = 0u8;
    for w in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        mask |= match w {
            "read" => 1 << Ddir::Read as u8,
            "write" => 1 << Ddir::Write as u8,
            "trim" => 1 << Ddir::Trim as u8,
            "sync" => REPLAY_SKIP_SYNC,
            o => return Err(format!("'{o}' is not one of read, write, trim, sync")),
        };
    }
    j.replay.skip = mask;
    Ok(())
}

fn set_read_iolog_format(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let v = v.trim();
    j.replay.format = if v == "auto" {
        None
    } else {
        Some(
            TraceFormat::ALL
                .into_iter()
                .find(|f| f.name() == v)
                .ok_or_else(|| {
                    format!(
                        "'{v}' is not one of auto, {}",
                        TraceFormat::ALL.map(|f| f.name()).join(", ")
                    )
                })?,
        )
    };
    Ok(())
}

/// A number, or `major,minor` as the kernel's dev_t (`MKDEV`: major << 20 | minor).
fn set_replay_device(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let v = v.trim();
    let bad = || format!("'{v}' is neither a number nor major,minor");
    j.replay.device = Some(match v.split_once(',') {
        Some((a, b)) => {
            let maj: u64 = a.trim().parse().map_err(|_| bad())?;
            let min: u64 = b.trim().parse().map_err(|_| bad())?;
            if maj >= 1 << 12 || min >= 1 << 20 {
                return Err(format!("'{v}': major below 4096 and minor below 2^20"));
            }
            maj << 20 | min
        }
        None => v.parse().map_err(|_| bad())?,
    });
    Ok(())
}

fn set_replay_skip_bad(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.replay.skip_bad = parse_bool(v)?;
    Ok(())
}

fn set_merge_blktrace_file(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let v = v.trim();
    if v.is_empty() {
        return Err("needs a file name".into());
    }
    j.replay.merge_file = Some(v.to_string());
    Ok(())
}

/// fio's FIO_OPT_FLOAT_LIST with `:` between values (whole numbers kept).
fn merge_list(v: &str, what: &str, max: u64) -> Result<Vec<u64>, String> {
    v.split(':')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(|w| {
            let x: f64 = w.parse().map_err(|_| format!("'{w}' is not a number"))?;
            if !(x >= 1.0 && x <= max as f64) {
                return Err(format!("{what} '{w}' is outside 1..={max}"));
            }
            Ok(x as u64)
        })
        .collect()
}

fn set_merge_blktrace_scalars(
    j: &mut JobSpec,
    _: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    j.replay.merge_scalars = merge_list(v, "a scale", 1_000_000)?;
    Ok(())
}

fn set_merge_blktrace_iters(
    j: &mut JobSpec,
    _: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    j.replay.merge_iters = merge_list(v, "an iteration count", 1_000_000)?;
    Ok(())
}

fn set_replay_scale(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.replay.scale = parse_uint(v, j.kb_base, u64::MAX)?.max(1);
    Ok(())
}

fn set_replay_align(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let a = parse_uint(v, j.kb_base, 1 << 40)?;
    if a > 1 && !a.is_power_of_two() {
        return Err(format!("{a} is not a power of 2"));
    }
    j.replay.align = a;
    Ok(())
}

/// `replay_time_scale`: percent of the recorded time (fio: 1 and up, 100 = as recorded).
fn set_replay_time_scale(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.replay.time_scale_pct = u32_of(v, j.kb_base, 1, 1_000_000)? as u64;
    Ok(())
}

/// `write_iolog`: the file the issued I/O is written to (fio version 3 iolog).
fn set_write_iolog(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let v = v.trim();
    if v.is_empty() {
        return Err("needs a file name".into());
    }
    j.write_iolog = Some(v.to_string());
    Ok(())
}

/// `write_*_log`: a log name prefix, or the job's name when given bare (`make_log_name`).
fn set_write_bw_log(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.logs.bw = Some(v.trim().to_string());
    Ok(())
}

fn set_write_lat_log(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.logs.lat = Some(v.trim().to_string());
    Ok(())
}

fn set_write_iops_log(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.logs.iops = Some(v.trim().to_string());
    Ok(())
}

fn set_write_hist_log(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.logs.hist = Some(v.trim().to_string());
    Ok(())
}

/// Log windows in ms, up to a day (fio takes any int; a longer window logs nothing).
const MAX_LOG_MSEC: u64 = 86_400_000;

fn set_log_avg_msec(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.logs.avg_msec = parse_uint(v, j.kb_base, MAX_LOG_MSEC)?;
    Ok(())
}

fn set_log_hist_msec(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.logs.hist_msec = parse_uint(v, j.kb_base, MAX_LOG_MSEC)?;
    Ok(())
}

fn set_log_hist_coarseness(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    // fio: "Integer in range [0,6]".
    j.logs.hist_coarseness = parse_uint(v, j.kb_base, 6)? as u32;
    Ok(())
}

fn set_log_max_value(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.logs.max_value = parse_bool(v)?;
    Ok(())
}

fn set_log_offset(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.logs.offset = parse_bool(v)?;
    Ok(())
}

fn set_log_prio(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.logs.prio = parse_bool(v)?;
    Ok(())
}

fn set_per_job_logs(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.logs.per_job = parse_bool(v)?;
    Ok(())
}

/// `bwavgtime` / `iopsavgtime`: the bw and IOPS sampling windows, 1 ms to a day.
fn set_bwavgtime(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.bwavgtime_ms = u32_of(v, j.kb_base, 1, MAX_LOG_MSEC)? as u64;
    Ok(())
}

fn set_iopsavgtime(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.iopsavgtime_ms = u32_of(v, j.kb_base, 1, MAX_LOG_MSEC)? as u64;
    Ok(())
}

/// fio's `FIO_MAX_CPUS` on Linux (`CPU_SETSIZE`): the largest CPU list fio accepts.
const FIO_MAX_CPUS: u32 = 1024;

/// `str_cpumask_cb`: bits 0..31 of an integer are CPUs. Whether each exists on the platform
/// is checked when the simulation is set up (fio checks `cpus_configured()` while parsing).
fn set_cpumask(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let n = parse_uint(v, j.kb_base, u64::MAX)?;
    let cpus: Vec<u32> = (0..32).filter(|i| n & (1u64 << i) != 0).collect();
    if cpus.is_empty() {
        return Err("no CPUs set (the mask is 0)".into());
    }
    j.cpus_allowed = Some(cpus);
    Ok(())
}

/// `set_cpus_allowed`: a comma list of CPUs and `a-b` ranges (`0-3,6`).
fn set_cpus_allowed(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let mut cpus = Vec::new();
    for part in v.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            // fio stops at an empty element (`strsep` gives "").
            break;
        }
        let num = |t: &str| -> Result<u32, String> {
            t.trim()
                .parse::<u32>()
                .map_err(|_| format!("invalid CPU '{}' in '{part}' (expected N or N-M)", t.trim()))
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(part)?, num(part)?),
        };
        if a > b {
            return Err(format!("empty CPU range '{part}' ({a} > {b})"));
        }
        if b >= FIO_MAX_CPUS {
            return Err(format!(
                "CPU {b} too large: fio supports up to {FIO_MAX_CPUS} CPUs"
            ));
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        return Err("no CPUs set".into());
    }
    j.cpus_allowed = Some(cpus);
    Ok(())
}

fn set_cpus_allowed_policy(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.cpus_allowed_policy = match v.trim() {
        "shared" => CpusAllowedPolicy::Shared,
        "split" => CpusAllowedPolicy::Split,
        t => return Err(format!("invalid value '{t}' (expected shared or split)")),
    };
    Ok(())
}

fn set_numjobs(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    // fio refuses more than REAL_MAX_JOBS (4096) jobs in total.
    j.numjobs = u32_of(v, j.kb_base, 1, 4096)?;
    Ok(())
}

fn set_stonewall(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.stonewall = parse_bool(v)?;
    Ok(())
}

fn set_new_group(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.new_group = parse_bool(v)?;
    Ok(())
}

/// `wait_for`: the name of an earlier job whose every clone must have ended before this
/// one starts (checked across jobs in `setup`).
fn set_wait_for(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.wait_for = Some(nonempty(v)?.to_string());
    Ok(())
}

/// `prio`: the level within the class, 0..=7 (IOPRIO_MIN_PRIO..IOPRIO_MAX_PRIO).
fn set_prio(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.ioprio = Some(u32_of(v, j.kb_base, 0, 7)?);
    Ok(())
}

/// `prioclass`: 0..=3 (none, which fio sets as best effort, RT, BE, idle).
fn set_prioclass(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.ioprio_class = Some(u32_of(v, j.kb_base, 0, 3)?);
    Ok(())
}

/// `exitall`: fio's `str_exitall_cb` sets `exitall_on_terminate` whatever the value
/// (fio 3.33 with `exitall=0` still ends the other jobs); the value must still parse.
fn set_exitall(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    parse_bool(v)?;
    j.exitall = true;
    Ok(())
}

const EXIT_WHAT_VALUES: [(&str, &str); 3] = [
    ("group", "exit_all=1 default behaviour"),
    (
        "stonewall",
        "quit all currently running jobs; continue with next stonewall",
    ),
    ("all", "Quit everything"),
];

fn set_exit_what(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.exit_what = match v.trim() {
        "group" => ExitWhat::Group,
        "stonewall" => ExitWhat::Stonewall,
        "all" => ExitWhat::All,
        t => return Err(invalid_choice(t, o)),
    };
    Ok(())
}

fn set_exitall_on_error(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.exitall_on_error = parse_bool(v)?;
    Ok(())
}

fn set_thread(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.thread = parse_bool(v)?;
    Ok(())
}

fn set_loops(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.loops = u32_of(v, j.kb_base, 1, u64::from(u32::MAX))?;
    Ok(())
}

fn set_filename(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.filename = Some(nonempty(v)?.to_string());
    Ok(())
}

fn set_directory(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.directory = Some(nonempty(v)?.to_string());
    Ok(())
}

fn set_nrfiles(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.nrfiles = u32_of(v, j.kb_base, 1, 1 << 20)?;
    Ok(())
}

fn set_filesize(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    let kb = j.kb_base;
    let (lo, hi) = parse_range(v, |s| parse_size(s, kb))?;
    j.filesize = if lo == 0 { None } else { Some(lo) };
    if lo != hi {
        add_note(
            j,
            format!(
                "note: option '{}': a range picks a random size per file in fio; blksim uses the low end ({lo} bytes)",
                o.name
            ),
        );
    }
    Ok(())
}

fn set_direct(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.direct = parse_bool(v)?;
    Ok(())
}

fn set_buffered(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.direct = !parse_bool(v)?;
    Ok(())
}

fn set_ioscheduler(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.ioscheduler = Some(nonempty(v)?.to_string());
    Ok(())
}

fn set_rw(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    // fio `str_rw_cb`: the `:N` postfix is a byte skip for sequential patterns and an I/O
    // count between new random offsets for random ones; setting rw resets both.
    let (pat, postfix) = match v.split_once(':') {
        Some((p, s)) => (p.trim(), Some(s.trim())),
        None => (v.trim(), None),
    };
    let rw = match pat {
        "read" => RwPattern::Read,
        "write" => RwPattern::Write,
        "trim" => RwPattern::Trim,
        "randread" => RwPattern::RandRead,
        "randwrite" => RwPattern::RandWrite,
        "randtrim" => RwPattern::RandTrim,
        "rw" | "readwrite" => RwPattern::ReadWrite,
        "randrw" => RwPattern::RandRw,
        "trimwrite" => RwPattern::TrimWrite,
        "randtrimwrite" => RwPattern::RandTrimWrite,
        _ => return Err(invalid_choice(pat, o)),
    };
    j.rw = rw;
    j.rw_seq_skip = 0;
    j.rw_nr_random = 1;
    if let Some(n) = postfix {
        if n.is_empty() {
            return Err(format!("missing number after '{pat}:'"));
        }
        if rw.is_random() {
            j.rw_nr_random = u32_of(n, j.kb_base, 1, u64::from(u32::MAX))?;
        } else {
            j.rw_seq_skip = parse_signed_size(n, j.kb_base)?;
        }
    }
    Ok(())
}

fn set_rw_sequencer(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.rw_sequencer_identical = match v.trim() {
        "sequential" => false,
        "identical" => true,
        _ => return Err(invalid_choice(v, o)),
    };
    Ok(())
}

fn set_rwmixread(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    // fio `str_rwmix_read_cb` sets both directions, so with both options the last one wins.
    j.rwmixread = u32_of(v, j.kb_base, 0, 100)?;
    Ok(())
}

fn set_rwmixwrite(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.rwmixread = 100 - u32_of(v, j.kb_base, 0, 100)?;
    Ok(())
}

fn block_size(v: &str, kb: u32) -> Result<u64, String> {
    let b = parse_size(v, kb)?;
    if b == 0 {
        return Err("block size must be greater than 0".into());
    }
    Ok(b)
}

/// fio keeps bs/bsrange (min_bs/max_bs) and bssplit apart, and `get_next_buflen` uses the
/// split whenever one is set, so a later `bs` doesn't undo an inherited `bssplit`.
fn set_fixed_or_range(j: &mut JobSpec, o: &OptionDesc, d: usize, lo: u64, hi: u64) {
    if j.bs[d].split.is_empty() {
        j.bs[d] = BsSpec {
            min: lo,
            max: hi,
            split: Vec::new(),
        };
    } else {
        add_note(
            j,
            format!("note: option '{}' has no effect on {} because bssplit is set (bssplit takes precedence, as in fio)", o.name, DDIR_NAMES[d]),
        );
    }
}

fn set_bs(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    let kb = j.kb_base;
    let mut vals = [None; 3];
    each_ddir(v, |d, p| {
        vals[d] = Some(block_size(p, kb)?);
        Ok(())
    })?;
    for (d, b) in vals.iter().enumerate() {
        if let Some(b) = *b {
            set_fixed_or_range(j, o, d, b, b);
        }
    }
    Ok(())
}

fn set_bsrange(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    let kb = j.kb_base;
    let mut vals = [None; 3];
    each_ddir(v, |d, p| {
        vals[d] = Some(parse_range(p, |s| block_size(s, kb))?);
        Ok(())
    })?;
    for (d, r) in vals.iter().enumerate() {
        if let Some((lo, hi)) = *r {
            set_fixed_or_range(j, o, d, lo, hi);
        }
    }
    Ok(())
}

/// One direction of `bssplit` (fio `bssplit_ddir`): `bs/pct:bs/pct...`, at most 64 entries.
/// Entries without a percentage share what is left equally; a total over 100 is an error.
/// Entries are sorted by size as fio does, and whatever fio's integer shares leave over goes to
/// the largest size, which is the entry fio's `get_next_buflen` falls through to.
pub(crate) fn parse_bssplit(s: &str, kb: u32) -> Result<BsSpec, String> {
    let mut entries: Vec<(u64, Option<u32>)> = Vec::new();
    for e in s.split(':').map(str::trim).filter(|e| !e.is_empty()) {
        if entries.len() == 64 {
            return Err("too many bssplit entries (at most 64 per direction)".into());
        }
        let (bs_s, pct_s) = e.split_once('/').unwrap_or((e, ""));
        let bs = block_size(bs_s, kb)?;
        // `split_parse_ddir`: no percentage, or 0, is a share of what the others leave.
        let pct = if pct_s.trim().is_empty() {
            None
        } else {
            Some(u32_of(pct_s, kb, 0, 100)?).filter(|&p| p > 0)
        };
        entries.push((bs, pct));
    }
    if entries.is_empty() {
        return Err("empty bssplit".into());
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    if given > 100 {
        return Err(format!(
            "bssplit percentages add up to {given}, more than 100"
        ));
    }
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    let share = (100 - given).checked_div(missing).unwrap_or(0);
    // In the order given: the generator sorts them by percentage as fio's `qsort` does
    // (stably), so entries with equal shares keep the job's order, which decides which
    // size a draw maps to. What integer shares leave over (three blanks get 33 each) is
    // left as fio leaves it: a draw past the last share takes the last entry.
    let split: Vec<BsSplit> = entries
        .iter()
        .map(|&(bs, p)| BsSplit {
            bs,
            pct: p.unwrap_or(share),
        })
        .collect();
    let min = split.iter().map(|e| e.bs).min().unwrap_or(4096);
    let max = split.iter().map(|e| e.bs).max().unwrap_or(4096);
    Ok(BsSpec { min, max, split })
}

fn set_bssplit(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let kb = j.kb_base;
    let mut vals: [Option<BsSpec>; 3] = [None, None, None];
    each_ddir(v, |d, p| {
        vals[d] = Some(parse_bssplit(p, kb)?);
        Ok(())
    })?;
    for (d, b) in vals.into_iter().enumerate() {
        if let Some(b) = b {
            j.bs[d] = b;
        }
    }
    Ok(())
}

fn set_blockalign(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let kb = j.kb_base;
    let mut vals = [None; 3];
    each_ddir(v, |d, p| {
        vals[d] = Some(parse_size(p, kb)?);
        Ok(())
    })?;
    for (d, b) in vals.iter().enumerate() {
        if let Some(b) = *b {
            // 0 = unset: fio's fixup makes it the minimum block size.
            j.blockalign[d] = if b == 0 { None } else { Some(b) };
        }
    }
    Ok(())
}

/// `serialize_overlap`.
fn set_serialize_overlap(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.serialize_overlap = parse_bool(v)?;
    Ok(())
}

/// `bs_is_seq_rand`: the read sizes go to sequential I/O, the write sizes to random I/O.
fn set_bs_is_seq_rand(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.bs_is_seq_rand = parse_bool(v)?;
    Ok(())
}

fn set_bs_unaligned(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.bs_unaligned = parse_bool(v)?;
    Ok(())
}

fn set_size(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    // size=0 is fio's "not set": use the file/device size.
    j.size = match parse_size_or_pct(v, j.kb_base)? {
        SizeOrPct::Bytes(0) => None,
        s => Some(s),
    };
    Ok(())
}

fn set_io_size(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let n = parse_size(v, j.kb_base)?;
    j.io_size = if n == 0 { None } else { Some(n) };
    Ok(())
}

fn set_offset(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.offset = parse_size_or_pct(v, j.kb_base)?;
    Ok(())
}

fn set_offset_align(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let a = parse_size(v, j.kb_base)?;
    // A `FIO_OPT_INT`: fio stores it through an `unsigned int`, so a larger value is cut to
    // its low 32 bits (4g becomes 0 and crashes fio). Past that, say so instead.
    if a > u64::from(u32::MAX) {
        return Err(format!(
            "{a} is out of range: fio 3.33 keeps offset_align in 32 bits (at most {})",
            u32::MAX
        ));
    }
    j.offset_align = Some(a);
    Ok(())
}

fn set_offset_increment(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    match parse_size_or_pct(v, j.kb_base)? {
        SizeOrPct::Bytes(b) => {
            j.offset_increment = b;
            j.offset_increment_pct = None;
        }
        SizeOrPct::PctMilli(p) => {
            j.offset_increment = 0;
            j.offset_increment_pct = Some(p);
        }
    }
    Ok(())
}

fn set_number_ios(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.number_ios = parse_size(v, j.kb_base)?;
    Ok(())
}

const SYNC_ENGINES: [&str; 5] = ["sync", "psync", "vsync", "pvsync", "pvsync2"];
const ASYNC_ENGINES: [&str; 3] = ["libaio", "io_uring", "posixaio"];
/// fio engines blksim knows but can't simulate (their I/O isn't block I/O on one device, or
/// needs special hardware).
const OTHER_ENGINES: [&str; 40] = [
    "mmap",
    "splice",
    "sg",
    "net",
    "netsplice",
    "cpuio",
    "rdma",
    "falloc",
    "e4defrag",
    "mtd",
    "external",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "dev-dax",
    "libpmem",
    "http",
    "nbd",
    "rados",
    "rbd",
    "windowsaio",
    "solarisaio",
    "guasi",
    "binject",
    "gfapi",
    "gfapi_async",
    "libhdfs",
    "libiscsi",
    "nfs",
    "xnvme",
    "io_uring_cmd",
    "libcufile",
    "ftruncate",
    "exec",
    "dfs",
    "libzbc",
    "pmemblk",
];

fn set_ioengine(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    let t = nonempty(v)?;
    // `external:/path/to.so` carries a path after the colon.
    let name = t.split(':').next().unwrap_or(t).trim();
    if let Some(n) = SYNC_ENGINES.iter().find(|n| **n == name) {
        j.ioengine = IoEngine::Sync(n);
    } else if let Some(n) = ASYNC_ENGINES.iter().find(|n| **n == name) {
        j.ioengine = IoEngine::Async(n);
    } else if name == "null" {
        j.ioengine = IoEngine::Null;
    } else {
        let supported: Vec<&str> = o.values.iter().map(|(n, _)| *n).collect();
        let what = if OTHER_ENGINES.contains(&name) {
            "is not supported by blksim"
        } else {
            "is unknown"
        };
        return Err(format!(
            "ioengine '{name}' {what} (supported: {})",
            supported.join(", ")
        ));
    }
    Ok(())
}

fn set_iodepth(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.iodepth = u32_of(v, j.kb_base, 1, MAX_DEPTH)?;
    j.iodepth_set = true;
    Ok(())
}

fn set_iodepth_batch_submit(
    j: &mut JobSpec,
    _: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    j.iodepth_batch_submit = u32_of(v, j.kb_base, 0, MAX_DEPTH)?;
    Ok(())
}

fn set_iodepth_batch_complete_min(
    j: &mut JobSpec,
    _: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    j.iodepth_batch_complete_min = u32_of(v, j.kb_base, 0, MAX_DEPTH)?;
    Ok(())
}

fn set_iodepth_batch_complete_max(
    j: &mut JobSpec,
    _: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    j.iodepth_batch_complete_max = u32_of(v, j.kb_base, 0, MAX_DEPTH)?;
    Ok(())
}

fn set_iodepth_low(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.iodepth_low = Some(u32_of(v, j.kb_base, 0, MAX_DEPTH)?);
    Ok(())
}

fn set_io_submit_mode(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.io_submit_offload = match v.trim() {
        "inline" => false,
        "offload" => true,
        _ => return Err(invalid_choice(v, o)),
    };
    Ok(())
}

fn set_randrepeat(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.randrepeat = parse_bool(v)?;
    Ok(())
}

fn set_allrandrepeat(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.allrandrepeat = parse_bool(v)?;
    Ok(())
}

fn set_randseed(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.randseed = parse_size(v, j.kb_base)?;
    j.randseed_set = true;
    Ok(())
}

fn set_hipri(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.hipri = parse_bool(v)?;
    Ok(())
}

fn set_fixedbufs(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.io_uring.fixedbufs = parse_bool(v)?;
    Ok(())
}

fn set_registerfiles(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.io_uring.registerfiles = parse_bool(v)?;
    Ok(())
}

fn set_sqthread_poll(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.io_uring.sqthread_poll = parse_bool(v)?;
    Ok(())
}

/// fio's `fio_ioring_sqpoll_cb`: the CPU, and that it was given (`IORING_SETUP_SQ_AFF`).
/// Whether the platform has that CPU is checked against the platform when the run is set up.
fn set_sqthread_poll_cpu(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.io_uring.sqthread_poll_cpu = Some(u32_of(v, j.kb_base, 0, 4095)? as u16);
    Ok(())
}

/// A reads,writes pair of integers in `min..=max` (one value for both; a trims value is
/// taken and unused), over what the job had: fio's `FIO_OPT_INT` with `off1` and `off2`.
fn rw_pair(v: &str, kb: u32, min: u64, max: u64, had: [u32; 2]) -> Result<[u32; 2], String> {
    let mut out = had;
    each_ddir(v, |d, p| {
        if d < 2 {
            out[d] = u32_of(p, kb, min, max)?;
        }
        Ok(())
    })?;
    Ok(out)
}

/// `cmdprio_percentage`: 0..=100.
fn set_cmdprio_percentage(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.cmdprio.percentage = rw_pair(v, j.kb_base, 0, 100, j.cmdprio.percentage)?;
    Ok(())
}

/// `cmdprio_class`: 1..=3 (`IOPRIO_MIN_PRIO_CLASS + 1` to `IOPRIO_MAX_PRIO_CLASS`).
fn set_cmdprio_class(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.cmdprio.class = rw_pair(v, j.kb_base, 1, 3, j.cmdprio.class)?;
    Ok(())
}

/// `cmdprio`: 0..=7 (`IOPRIO_MIN_PRIO` to `IOPRIO_MAX_PRIO`).
fn set_cmdprio(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.cmdprio.level = rw_pair(v, j.kb_base, 0, 7, j.cmdprio.level)?;
    Ok(())
}

/// `cmdprio_bssplit`: per direction (`str_split_parse`), `bs/perc[/class/level]` entries
/// separated by `:` (`split_parse_prio_ddir`, `parse_cmdprio_bssplit_entry`). An empty value
/// turns it off, as fio tests the string's length.
fn set_cmdprio_bssplit(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    if v.trim().is_empty() {
        j.cmdprio.bssplit = None;
        return Ok(());
    }
    let kb = j.kb_base;
    let mut out: [Vec<CmdPrioSplit>; 2] = Default::default();
    each_ddir(v, |d, p| {
        if d < 2 {
            out[d] = parse_cmdprio_bssplit(p, kb)?;
        }
        Ok(())
    })?;
    j.cmdprio.bssplit = Some(out);
    Ok(())
}

/// One direction of `cmdprio_bssplit`.
fn parse_cmdprio_bssplit(s: &str, kb: u32) -> Result<Vec<CmdPrioSplit>, String> {
    let mut out = Vec::new();
    let entries: Vec<&str> = s.split(':').take_while(|e| !e.is_empty()).collect();
    // `BSSPLIT_MAX`.
    if entries.len() > 64 {
        return Err("too many cmdprio_bssplit entries (at most 64 per direction)".into());
    }
    for e in entries {
        let fields: Vec<&str> = e.split('/').collect();
        let bs = parse_size(fields[0], kb)
            .map_err(|err| format!("cmdprio_bssplit entry '{e}': {err}"))?;
        let num = |f: &str, max: u64| -> Result<u32, String> {
            // `%u`, then fio's `min(value, max)`.
            let n: u64 = f.trim().parse().map_err(|_| {
                format!("cmdprio_bssplit entry '{e}': '{f}' is not a number (expected bs/perc or bs/perc/class/level)")
            })?;
            Ok(n.min(max) as u32)
        };
        let (perc, prio) = match fields.len() {
            // `bs/`, and `bs` alone: sscanf matches the size only.
            1 => (0, None),
            2 if fields[1].is_empty() => (0, None),
            2 => (num(fields[1], 100)?, None),
            4 => {
                let class = num(fields[2], 3)?;
                let level = num(fields[3], 7)?;
                // `ioprio_value`: class 0 is best effort.
                let class = if class == 0 { 2 } else { class };
                (num(fields[1], 100)?, Some((class << 13) | level))
            }
            _ => {
                return Err(format!(
                    "invalid cmdprio_bssplit entry '{e}' (expected bs/perc or bs/perc/class/level)"
                ))
            }
        };
        // "skip zero perc entries, they provide no useful information".
        if perc > 0 {
            out.push(CmdPrioSplit { bs, perc, prio });
        }
    }
    // `fio_split_prio_cmp` by block size; glibc's qsort keeps equal sizes in order.
    out.sort_by_key(|e| e.bs);
    Ok(out)
}

fn set_norandommap(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.norandommap = parse_bool(v)?;
    Ok(())
}

/// `dist:value[:center]` (fio `str_random_distribution_cb` / `split_parse_distr`).
fn dist_params(rest: Option<&str>, default: f64) -> Result<(f64, Option<f64>), String> {
    let Some(rest) = rest else {
        return Ok((default, None));
    };
    let (val, center) = match rest.split_once(':') {
        Some((v, c)) => (v, Some(c)),
        None => (rest, None),
    };
    let val = parse_float(val)?;
    let center = match center {
        Some(c) => {
            let c = parse_float(c)?;
            if !(0.0..=1.0).contains(&c) {
                return Err(format!(
                    "distribution center {c} out of range (0 <= center <= 1.0)"
                ));
            }
            Some(c)
        }
        None => None,
    };
    Ok((val, center))
}

/// One direction of `zoned:`/`zoned_abs:` (fio `zone_split_ddir`): `pct/range:...`, at most
/// 256 zones. Access percentages must add up to exactly 100; a zone with a blank range (or
/// blank percentage) shares what is left.
fn parse_zones(s: &str, kb: u32, absolute: bool) -> Result<(Vec<Zone>, Vec<ZoneAbs>), String> {
    let mut raw: Vec<(Option<u32>, Option<u64>)> = Vec::new();
    for e in s.split(':').map(str::trim).filter(|e| !e.is_empty()) {
        if raw.len() == 256 {
            return Err("too many zones (at most 256 per direction)".into());
        }
        let (p, r) = e.split_once('/').unwrap_or((e, ""));
        let pct = if p.trim().is_empty() {
            None
        } else {
            Some(u32_of(p, kb, 0, 100)?)
        };
        let range = if r.trim().is_empty() {
            None
        } else if absolute {
            Some(parse_size(r, kb)?)
        } else {
            Some(u64::from(u32_of(
                r.trim().trim_end_matches('%'),
                kb,
                0,
                100,
            )?))
        };
        raw.push((pct, range));
    }
    if raw.is_empty() {
        return Err("no zones given".into());
    }
    let perc: u32 = raw.iter().filter_map(|z| z.0).sum();
    let sperc: u64 = if absolute {
        0
    } else {
        raw.iter().filter_map(|z| z.1).sum()
    };
    if perc > 100 || sperc > 100 {
        return Err("zone percentages add up to more than 100%".into());
    }
    let perc_missing = raw.iter().filter(|z| z.0.is_none()).count() as u32;
    let sperc_missing = raw.iter().filter(|z| z.1.is_none()).count() as u64;
    let perc_share = (100 - perc).checked_div(perc_missing).unwrap_or(0);
    let total: u32 = perc + perc_share * perc_missing;
    if total < 100 && perc_missing == 0 {
        return Err(format!(
            "access percentages don't add up to 100 for the zoned distribution (got {perc})"
        ));
    }
    let sperc_share = (100 - sperc).checked_div(sperc_missing).unwrap_or(0);
    let mut zones = Vec::new();
    let mut abs = Vec::new();
    for (p, r) in raw {
        let access_pct = p.unwrap_or(perc_share);
        if absolute {
            let size = r.ok_or("zoned_abs needs a size for every zone (pct/size)")?;
            abs.push(ZoneAbs { access_pct, size });
        } else {
            zones.push(Zone {
                access_pct,
                size_pct: r.unwrap_or(sperc_share) as u32,
            });
        }
    }
    Ok((zones, abs))
}

fn set_random_distribution(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    let t = nonempty(v)?;
    let (kind, rest) = match t.split_once(':') {
        Some((k, r)) => (k.trim(), Some(r.trim())),
        None => (t, None),
    };
    j.random_distribution = match kind {
        "random" => RandomDistribution::Random,
        "zipf" => {
            // fio's FIO_DEF_ZIPF is 1.1.
            let (theta, center) = dist_params(rest, 1.1)?;
            if theta == 1.0 || theta <= 0.0 {
                return Err("zipf theta must be greater than 0 and different from 1.0".into());
            }
            RandomDistribution::Zipf { theta, center: center.unwrap_or(0.0) }
        }
        "pareto" => {
            // fio's FIO_DEF_PARETO is 0.2.
            let (h, center) = dist_params(rest, 0.2)?;
            if h <= 0.0 || h >= 1.0 {
                return Err("pareto input out of range (0 < input < 1.0)".into());
            }
            RandomDistribution::Pareto { h, center: center.unwrap_or(0.0) }
        }
        "normal" => {
            let (dev_pct, center) = dist_params(rest, 0.0)?;
            if !(0.0..100.0).contains(&dev_pct) {
                return Err("normal deviation out of range (0 <= input < 100.0)".into());
            }
            RandomDistribution::Normal { dev_pct, center: center.unwrap_or(0.5) }
        }
        "zoned" | "zoned_abs" => {
            let absolute = kind == "zoned_abs";
            let rest = rest.ok_or_else(|| format!("{kind} needs zones ({kind}:pct/range:...)"))?;
            let kb = j.kb_base;
            let mut z: [Vec<Zone>; 3] = Default::default();
            let mut za: [Vec<ZoneAbs>; 3] = Default::default();
            // fio `str_split_parse`: one list for all directions unless commas separate them;
            // a direction not given keeps no zones (uniform).
            each_ddir(rest, |d, p| {
                let (zs, abs) = parse_zones(p, kb, absolute)?;
                z[d] = zs;
                za[d] = abs;
                Ok(())
            })?;
            if absolute {
                RandomDistribution::ZonedAbs { zones: za }
            } else {
                RandomDistribution::Zoned { zones: z }
            }
        }
        "sequence" => {
            return Err("random_distribution 'sequence' is not supported (new in fio 3.42, not in fio 3.33 which blksim follows)".into())
        }
        _ => return Err(invalid_choice(kind, o)),
    };
    Ok(())
}

fn set_percentage_random(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let kb = j.kb_base;
    let mut out = j.percentage_random;
    each_ddir(v, |d, p| {
        out[d] = u32_of(p, kb, 0, 100)?;
        Ok(())
    })?;
    j.percentage_random = out;
    Ok(())
}

fn set_percentage_sequential(
    j: &mut JobSpec,
    _: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    let kb = j.kb_base;
    let mut out = j.percentage_random;
    each_ddir(v, |d, p| {
        out[d] = 100 - u32_of(p, kb, 0, 100)?;
        Ok(())
    })?;
    j.percentage_random = out;
    Ok(())
}

fn set_random_generator(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.random_generator = match v.trim() {
        "tausworthe" => RandomGenerator::Tausworthe,
        "tausworthe64" => RandomGenerator::Tausworthe64,
        "lfsr" => RandomGenerator::Lfsr,
        _ => return Err(invalid_choice(v, o)),
    };
    Ok(())
}

fn set_zonemode(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.zonemode = match v.trim() {
        "none" => ZoneMode::None,
        "strided" => ZoneMode::Strided,
        "zbd" => {
            return Err(
                "zonemode 'zbd' is not supported by blksim (none or strided): the device models have no zones"
                    .into(),
            )
        }
        m => return Err(format!("invalid value '{m}' (valid: none, strided, zbd)")),
    };
    Ok(())
}

fn set_zonesize(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.zonesize = parse_size(v, j.kb_base)?;
    Ok(())
}

fn set_zonerange(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.zonerange = parse_size(v, j.kb_base)?;
    Ok(())
}

fn set_zoneskip(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.zoneskip = parse_size(v, j.kb_base)?;
    Ok(())
}

fn set_file_service_type(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    let t = v.trim();
    let kind = t.split(':').next().unwrap_or(t);
    match kind {
        // With one file (the usual case for a block device) the service type is moot.
        "roundrobin" => Ok(()),
        "random" | "sequential" | "zipf" | "pareto" | "normal" | "gauss" => set_ignored(j, o, v),
        _ => Err(format!(
            "invalid value '{t}' (valid: random, roundrobin, sequential, zipf, pareto, normal)"
        )),
    }
}

/// Upper bound of `runtime`, `ramp_time` and `startdelay`: 10^9 s (about 31.7 years). fio
/// keeps them as unsigned 64-bit microseconds; blksim's clock is 64-bit nanoseconds (about
/// 584 years), and the bound keeps their sum far inside it.
pub const MAX_JOB_TIME_NS: u64 = 1_000_000_000 * NS_PER_SEC;
/// Upper bound of `thinktime`: fio stores it in an `unsigned int` of microseconds
/// (`FIO_OPT_INT`, whose `maxval` defaults to `UINT_MAX` in `option_init`), about 71.6 minutes.
pub const MAX_THINKTIME_NS: u64 = u32::MAX as u64 * NS_PER_US;

/// A time option in `default_ns` units, at most `max_ns`.
fn time_opt(v: &str, default_ns: u64, max_ns: u64) -> Result<u64, String> {
    let out_of_range = || {
        format!(
            "time '{}' is out of range (at most {} s)",
            v.trim(),
            fmt_secs(max_ns)
        )
    };
    match parse_time_ns(v, default_ns) {
        Ok(ns) if ns <= max_ns => Ok(ns),
        Ok(_) => Err(out_of_range()),
        // Past 2^64 ns the number could not even be held: the same bound applies.
        Err(e) if e.ends_with("is too large") => Err(out_of_range()),
        Err(e) => Err(e),
    }
}

/// `ns` as seconds with as many decimals as needed (`4294.967295`).
fn fmt_secs(ns: u64) -> String {
    let (s, frac) = (ns / NS_PER_SEC, ns % NS_PER_SEC);
    if frac == 0 {
        s.to_string()
    } else {
        format!("{s}.{:09}", frac).trim_end_matches('0').to_string()
    }
}

/// `str_steadystate_cb`: `criterion:limit`, the limit a percentage (`10%`), an IOPS count
/// (a float), or a bandwidth in bytes per second (a size: `1m`).
fn set_steadystate(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    let t = nonempty(v)?;
    let (crit, limit) = t.split_once(':').ok_or_else(|| {
        "steadystate threshold must be specified in addition to criterion (e.g. iops:10%)"
            .to_string()
    })?;
    let (iops, slope) = match crit.trim() {
        "iops" => (true, false),
        "iops_slope" => (true, true),
        "bw" => (false, false),
        "bw_slope" => (false, true),
        _ => return Err(invalid_choice(crit, o)),
    };
    let limit = limit.trim();
    let (pct, value) = if let Some(p) = limit.strip_suffix('%') {
        (true, parse_float(p)?)
    } else if iops {
        (false, parse_float(limit)?)
    } else {
        (false, parse_size(limit, j.kb_base)? as f64)
    };
    let ss = &mut j.steadystate;
    (ss.iops, ss.slope, ss.pct, ss.limit) = (iops, slope, pct, value);
    Ok(())
}

/// The longest steady-state window, one day: each job keeps its samples (two 8-byte numbers
/// per second, 1.4 MB for a day), as fio does.
pub const MAX_STEADYSTATE_DURATION_NS: u64 = 86_400 * NS_PER_SEC;

fn set_steadystate_duration(
    j: &mut JobSpec,
    _: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    let ns = time_opt(v, NS_PER_SEC, MAX_STEADYSTATE_DURATION_NS)?;
    j.steadystate.dur_ns = ns;
    j.steadystate.dur_s = ns / NS_PER_SEC;
    Ok(())
}

fn set_steadystate_ramp_time(
    j: &mut JobSpec,
    _: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    j.steadystate.ramp_ns = time_opt(v, NS_PER_SEC, MAX_JOB_TIME_NS)?;
    Ok(())
}

fn set_runtime(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.runtime_ns = time_opt(v, NS_PER_SEC, MAX_JOB_TIME_NS)?;
    Ok(())
}

fn set_time_based(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.time_based_asked = parse_bool(v)?;
    j.time_based = j.time_based_asked;
    Ok(())
}

fn set_ramp_time(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.ramp_time_ns = time_opt(v, NS_PER_SEC, MAX_JOB_TIME_NS)?;
    Ok(())
}

fn set_startdelay(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.startdelay_ns = parse_range(v, |s| time_opt(s, NS_PER_SEC, MAX_JOB_TIME_NS))?;
    Ok(())
}

fn set_rate(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let kb = j.kb_base;
    let mut out = j.rate;
    each_ddir(v, |d, p| {
        out[d] = parse_size(p, kb)?;
        Ok(())
    })?;
    j.rate = out;
    Ok(())
}

fn set_rate_iops(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let kb = j.kb_base;
    let mut out = j.rate_iops;
    each_ddir(v, |d, p| {
        out[d] = parse_uint(p, kb, u64::from(u32::MAX))?;
        Ok(())
    })?;
    j.rate_iops = out;
    Ok(())
}

/// `rate_min`: bytes per second per direction.
fn set_rate_min(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let kb = j.kb_base;
    let mut out = j.rate_min;
    each_ddir(v, |d, p| {
        out[d] = parse_size(p, kb)?;
        Ok(())
    })?;
    j.rate_min = out;
    Ok(())
}

/// `rate_iops_min`: I/Os per second per direction.
fn set_rate_iops_min(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let kb = j.kb_base;
    let mut out = j.rate_iops_min;
    each_ddir(v, |d, p| {
        out[d] = parse_uint(p, kb, u64::from(u32::MAX))?;
        Ok(())
    })?;
    j.rate_iops_min = out;
    Ok(())
}

/// `rate_cycle`: the ms over which `rate_min` and `rate_iops_min` are averaged.
fn set_rate_cycle(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.rate_cycle_ms = u64::from(u32_of(v, j.kb_base, 0, u64::from(u32::MAX))?);
    Ok(())
}

fn set_rate_process(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.rate_poisson = match v.trim() {
        "linear" => false,
        "poisson" => true,
        _ => return Err(invalid_choice(v, o)),
    };
    Ok(())
}

fn set_thinktime(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.thinktime_ns = time_opt(v, NS_PER_US, MAX_THINKTIME_NS)?;
    Ok(())
}

fn set_thinktime_spin(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.thinktime_spin_ns = time_opt(v, NS_PER_US, MAX_THINKTIME_NS)?;
    Ok(())
}

fn set_thinktime_blocks_type(
    j: &mut JobSpec,
    o: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    j.thinktime_blocks_issue = match v.trim() {
        "complete" => false,
        "issue" => true,
        _ => return Err(invalid_choice(v, o)),
    };
    Ok(())
}

fn set_thinktime_blocks(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.thinktime_blocks = u32_of(v, j.kb_base, 1, u64::from(u32::MAX))?;
    j.thinktime_blocks_set = true;
    Ok(())
}

/// `rate_ignore_thinktime`: a think time counts as I/O done at the rate.
/// `latency_target`: a time, µs by default; fio keeps it in ns (`fixup_options`).
fn set_latency_target(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.latency_target_ns = time_opt(v, NS_PER_US, MAX_THINKTIME_NS)?;
    Ok(())
}

/// `latency_window`: a time, µs by default, which fio keeps in µs.
fn set_latency_window(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.latency_window_us = time_opt(v, NS_PER_US, MAX_THINKTIME_NS)? / NS_PER_US;
    Ok(())
}

/// `latency_percentile`: 0 to 100.
fn set_latency_percentile(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let p = parse_float(v)?;
    if !(0.0..=100.0).contains(&p) {
        return Err(format!("{p} is out of range (0 to 100)"));
    }
    j.latency_percentile = p;
    Ok(())
}

fn set_latency_run(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.latency_run = parse_bool(v)?;
    Ok(())
}

/// `max_latency`: reads,writes,trims, times in µs by default, kept in ns.
fn set_max_latency(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    let mut out = j.max_latency_ns;
    each_ddir(v, |d, p| {
        out[d] = time_opt(p, NS_PER_US, MAX_THINKTIME_NS)?;
        Ok(())
    })?;
    j.max_latency_ns = out;
    Ok(())
}

fn set_rate_ignore_thinktime(
    j: &mut JobSpec,
    _: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    j.rate_ignore_thinktime = parse_bool(v)?;
    Ok(())
}

/// `thinktime_iotime`: seconds unless suffixed (fio's `is_seconds`).
fn set_thinktime_iotime(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.thinktime_iotime_ns = time_opt(v, NS_PER_SEC, MAX_THINKTIME_NS)?;
    Ok(())
}

fn set_fsync(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.fsync = u32_of(v, j.kb_base, 0, u64::from(u32::MAX))?;
    Ok(())
}

fn set_fdatasync(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.fdatasync = u32_of(v, j.kb_base, 0, u64::from(u32::MAX))?;
    Ok(())
}

fn set_sync(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    // fio `sync` posval: none/0, sync/1 (O_SYNC), dsync (O_DSYNC).
    j.sync_io = match v.trim() {
        "none" | "0" => false,
        "sync" | "1" | "dsync" => true,
        _ => return Err(invalid_choice(v, o)),
    };
    Ok(())
}

fn set_continue_on_error(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    // fio `continue_on_error` posval: ERROR_TYPE_READ 1, _WRITE 2, _VERIFY 4.
    j.continue_on_error = match v.trim() {
        "none" | "0" => 0,
        "read" => 1,
        "write" => 2,
        "io" => 3,
        "verify" => 4,
        "all" | "1" => 7,
        _ => return Err(invalid_choice(v, o)),
    };
    Ok(())
}

/// `ignore_error` (`str_ignore_error_cb`, `ignore_error_type`): `,` separates the read,
/// write and verify lists, `:` their errnos, each a name from fio's `str2error` table or a
/// number (`atoi`, its sign dropped).
fn set_ignore_error(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    // `str2error`: fio knows these names, numbered from EPERM = 1.
    const NAMES: [&str; 34] = [
        "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
        "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
        "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
        "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
    ];
    let types: Vec<&str> = v.trim().split(',').collect();
    if types.len() > 3 {
        return Err("Illegal error type (at most read,write,verify lists)".into());
    }
    for (t, list) in types.iter().enumerate() {
        let mut errs = Vec::new();
        for name in list.split(':') {
            if name.is_empty() {
                break;
            }
            let e = if name.starts_with('E') {
                NAMES
                    .iter()
                    .position(|n| *n == name)
                    .map_or(0, |i| i as i32 + 1)
            } else {
                // `atoi`, the sign dropped: the leading number, 0 without one.
                let t = name.trim_start();
                let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
                let n: String = digits.chars().take_while(char::is_ascii_digit).collect();
                n.parse::<i64>().unwrap_or(0).min(i64::from(i32::MAX)) as i32
            };
            if e == 0 {
                return Err(format!("Unknown error {name}, please use number value"));
            }
            errs.push(e);
        }
        if !errs.is_empty() {
            j.continue_on_error |= 1 << t;
            j.ignore_error[t] = Some(errs);
        }
    }
    Ok(())
}

fn set_end_fsync(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.end_fsync = parse_bool(v)?;
    Ok(())
}

fn set_group_reporting(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.group_reporting = parse_bool(v)?;
    Ok(())
}

fn set_kb_base(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    // fio `kb_base_verify`.
    j.kb_base = match v.trim() {
        "1024" => 1024,
        "1000" => 1000,
        t => {
            return Err(format!(
                "invalid value '{t}' (kb_base must be 1000 or 1024)"
            ))
        }
    };
    Ok(())
}

fn set_unit_base(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.unit_base = match v.trim() {
        "0" => 0,
        "1" => 1,
        "8" => 8,
        _ => return Err(invalid_choice(v, o)),
    };
    Ok(())
}

fn set_unified_rw_reporting(
    j: &mut JobSpec,
    o: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    // fio accepts 0/1/2 for compatibility with the old boolean form.
    j.unified_rw_reporting = match v.trim() {
        "none" | "0" => "none",
        "mixed" | "1" => "mixed",
        "both" | "2" => "both",
        _ => return Err(invalid_choice(v, o)),
    }
    .to_string();
    Ok(())
}

fn set_gtod_reduce(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    // fio `str_gtod_reduce_cb`: turning it on disables all latency percentiles too.
    let on = parse_bool(v)?;
    j.gtod_reduce = on;
    if on {
        j.disable_lat = true;
        j.disable_clat = true;
        j.disable_slat = true;
        j.disable_bw = true;
        j.clat_percentiles = false;
        j.lat_percentiles = false;
        j.slat_percentiles = false;
    }
    Ok(())
}

fn set_disable_lat(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.disable_lat = parse_bool(v)?;
    Ok(())
}

fn set_disable_clat(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.disable_clat = parse_bool(v)?;
    Ok(())
}

fn set_disable_slat(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.disable_slat = parse_bool(v)?;
    Ok(())
}

fn set_disable_bw(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.disable_bw = parse_bool(v)?;
    Ok(())
}

/// `significant_figures`: 1 to 10.
fn set_significant_figures(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.sig_figs = u32_of(v, j.kb_base, 1, 10)?;
    Ok(())
}

fn set_stats(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.stats = parse_bool(v)?;
    Ok(())
}

fn set_clat_percentiles(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.clat_percentiles = parse_bool(v)?;
    Ok(())
}

fn set_lat_percentiles(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.lat_percentiles = parse_bool(v)?;
    Ok(())
}

fn set_slat_percentiles(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.slat_percentiles = parse_bool(v)?;
    Ok(())
}

fn set_percentile_list(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    // fio FIO_OPT_FLOAT_LIST with maxlen FIO_IO_U_LIST_MAX_LEN (20), values 0..=100.
    let mut list = Vec::new();
    for p in nonempty(v)?.split(':') {
        if list.len() == 20 {
            return Err("too many percentiles (at most 20)".into());
        }
        let f = parse_float(p)?;
        if !(0.0..=100.0).contains(&f) {
            return Err(format!("percentile {f} out of range (0 to 100)"));
        }
        list.push(f);
    }
    j.percentile_list = list;
    Ok(())
}

fn set_verify(j: &mut JobSpec, o: &'static OptionDesc, v: &str) -> Result<(), String> {
    let t = v.trim();
    if !o.values.iter().any(|(n, _)| *n == t) {
        return Err(invalid_choice(t, o));
    }
    j.verify = if t == "0" { None } else { Some(t.to_string()) };
    Ok(())
}

fn set_do_verify(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.do_verify = parse_bool(v)?;
    Ok(())
}

/// `verify_backlog` (fio's FIO_OPT_STR_VAL: a count, suffixes allowed).
fn set_verify_backlog(j: &mut JobSpec, _: &'static OptionDesc, v: &str) -> Result<(), String> {
    j.verify_backlog = parse_size(v, j.kb_base)?;
    Ok(())
}

fn set_verify_backlog_batch(
    j: &mut JobSpec,
    _: &'static OptionDesc,
    v: &str,
) -> Result<(), String> {
    j.verify_backlog_batch = parse_uint(v, j.kb_base, u32::MAX as u64)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// --cmdhelp

fn support_text(s: Support) -> &'static str {
    match s {
        Support::Modelled => "modelled",
        Support::NoMeaning => "accepted and ignored (no meaning in a simulation)",
        Support::NotModelled => "accepted and ignored (not modelled by blksim)",
    }
}

fn describe(o: &OptionDesc, out: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(out, "{:>20}: {}", o.name, o.help);
    if !o.aliases.is_empty() {
        let _ = writeln!(out, "{:>20}: {}", "alias", o.aliases.join(", "));
    }
    let _ = writeln!(out, "{:>20}: {}", "type", o.kind.help());
    let def = if o.default.is_empty() {
        "no default"
    } else {
        o.default
    };
    let _ = writeln!(out, "{:>20}: {}", "default", def);
    let _ = writeln!(out, "{:>20}: {}", "category", o.category.name());
    let _ = writeln!(out, "{:>20}: {}", "blksim", support_text(o.support));
    for (i, (v, h)) in o.values.iter().enumerate() {
        let label = if i == 0 { "valid values" } else { "" };
        let _ = writeln!(out, "{label:>20}: {v:<10} {h}");
    }
}

/// Help text like `fio --cmdhelp[=opt]`. `None` or `"all"` lists every option with its
/// one-line help; a name (or alias) gives the details of that option. An unknown name is an
/// error that names the closest option.
pub fn cmdhelp(name: Option<&str>) -> Result<String, String> {
    use std::fmt::Write;
    let mut out = String::new();
    match name {
        None | Some("all") => {
            for o in OPTIONS {
                let mark = match o.support {
                    Support::Modelled => "",
                    Support::NoMeaning => " [ignored: no meaning in a simulation]",
                    Support::NotModelled => " [ignored: not modelled]",
                };
                let _ = writeln!(out, "{:<24}: {}{}", o.name, o.help, mark);
            }
            Ok(out)
        }
        Some(n) => match find_option(n) {
            Some(o) => {
                describe(o, &mut out);
                Ok(out)
            }
            None => {
                let mut msg = format!("No such command: {n}");
                if let Some(s) = suggest(n) {
                    let _ = write!(msg, " (did you mean '{s}'?)");
                }
                Err(msg)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        let mut seen = std::collections::BTreeSet::new();
        for o in OPTIONS {
            assert!(seen.insert(o.name), "duplicate option {}", o.name);
            for a in o.aliases {
                assert!(seen.insert(a), "duplicate alias {a}");
            }
            assert!(!o.help.is_empty(), "{} has no help", o.name);
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("iodepht"), Some("iodepth"));
        assert_eq!(suggest("runtim"), Some("runtime"));
        assert_eq!(suggest("rwmixred"), Some("rwmixread"));
        assert_eq!(suggest("BS"), Some("bs"));
        assert_eq!(suggest("timout"), Some("timeout"));
        assert_eq!(suggest("xyzzyplugh"), None);
    }

    #[test]
    fn cmdhelp_all_and_one() {
        let all = cmdhelp(None).unwrap();
        assert!(all.contains("iodepth"));
        assert!(all.lines().count() >= OPTIONS.len());
        let one = cmdhelp(Some("bs")).unwrap();
        assert!(one.contains("blocksize"));
        assert!(one.contains("default: 4096"));
        let alias = cmdhelp(Some("timeout")).unwrap();
        assert!(alias.contains("runtime"));
        let err = cmdhelp(Some("iodepht")).unwrap_err();
        assert!(err.contains("did you mean 'iodepth'"), "{err}");
    }

    #[test]
    fn bssplit_rules() {
        let b = parse_bssplit("4k/50:1k/:32k/0", 1024).unwrap();
        let got: Vec<(u64, u32)> = b.split.iter().map(|e| (e.bs, e.pct)).collect();
        assert_eq!(got, vec![(4096, 50), (1024, 25), (32768, 25)]);
        assert_eq!((b.min, b.max), (1024, 32768));
        assert!(parse_bssplit("4k/60:8k/50", 1024)
            .unwrap_err()
            .contains("more than 100"));
        // Three blanks share 100 as 33/33/33, as fio's integer division leaves them.
        let b = parse_bssplit("4k/:8k/:16k/", 1024).unwrap();
        let got: Vec<u32> = b.split.iter().map(|e| e.pct).collect();
        assert_eq!(got, vec![33, 33, 33]);
    }
}
