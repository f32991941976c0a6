//! The replay script (in progress).
