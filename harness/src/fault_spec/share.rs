//! The share every sampling fault takes (a fraction of the deliveries):
//! its bound and its default, for the spec modules beside this one.

/// A share must lie in 0..=1.
pub(super) fn check_share(fault: &str, share: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&share) {
        Ok(())
    } else {
        Err(format!("{fault} share = {share}: expected 0 to 1"))
    }
}

/// The default share: every delivery.
pub(super) fn one() -> f64 {
    1.0
}
