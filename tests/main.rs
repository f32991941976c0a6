//! End-to-end tests of hookstorm against the reference receiver.
