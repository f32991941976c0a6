//! The reference webhook receiver (built in its own issue).
