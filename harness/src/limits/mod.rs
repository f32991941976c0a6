//! How much the harness holds: the byte budget of every read from outside
//! ([`budget`]: a hostile peer cannot make it hold more than it says) and
//! how the process asks the allocator for large buffers and gives them
//! back ([`memory`]). Leaves.

pub mod budget;
pub mod memory;
