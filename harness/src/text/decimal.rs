//! Decimal digits without `fmt`, for the paths that run once per request
//! (the bench's request bytes, its history lines, the signed timestamp):
//! `write!` through a formatter costs more than the number is worth there.

/// Writes `v` in decimal at the end of `buf` and returns the digits.
pub(crate) fn digits(v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = v;
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_read_as_to_string_writes_them() {
        let mut buf = [0u8; 20];
        for v in [0, 7, 10, 99, 1_000_000, u64::MAX] {
            assert_eq!(digits(v, &mut buf), v.to_string().as_bytes());
        }
    }
}
