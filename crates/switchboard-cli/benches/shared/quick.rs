//! Whether a benchmark was asked for its short run: `quick` (or `--quick`) after `--`, or its
//! environment variable set to anything but `0`.

/// Whether the arguments or `variable` ask for the short run.
pub(crate) fn asked_for_quick(variable: &str) -> bool {
    std::env::args()
        .skip(1)
        .any(|arg| arg == "quick" || arg == "--quick")
        || std::env::var_os(variable).is_some_and(|value| value != "0")
}
