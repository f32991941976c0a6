//! How the process asks the C allocator for large buffers.
//!
//! glibc gives an allocation above its threshold pages of its own and
//! unmaps them on free, but each such free raises the threshold (up to
//! 32 MiB): from then on the checker's multi-megabyte tables and sorted
//! copies come from the heap, whose freed pages stay counted against the
//! process. Fixing the threshold at [`MAPPED_FROM`] keeps every large
//! buffer mapped, so what one phase of a check frees goes back to the
//! system before the next one peaks. Measured on the 1.2M-key history of a
//! 40 s `hookstorm bench`: 311 MiB peak RSS for `hookstorm check` without
//! it, 290 MiB with it, in the same time.

/// Allocations of at least this many bytes get pages of their own.
pub const MAPPED_FROM: usize = 1 << 20;

/// Sets the allocator's threshold for this process (glibc only; elsewhere
/// the allocator's own policy stands).
pub fn map_large_allocations() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called
    // before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MAPPED_FROM as libc::c_int);
    }
}

/// Gives the heap's free pages back to the system: after the sending
/// phase of a bench, whose workers' buffers and latency histograms (about
/// 40 MiB at 50 connections) were freed in arenas that keep them, and
/// before its check.
pub fn give_back_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}
