//! Byte counts for people.

/// A byte count for people: `176 bytes`, `86.1 KiB`, `1.50 MiB`.
pub fn human(bytes: u64) -> String {
    const K: f64 = 1024.0;
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if b < K * K {
        format!("{:.1} KiB", b / K)
    } else if b < K * K * K {
        format!("{:.2} MiB", b / (K * K))
    } else {
        format!("{:.2} GiB", b / (K * K * K))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human(176), "176 B");
        assert_eq!(human(88192), "86.1 KiB");
        assert_eq!(human(3 << 20), "3.00 MiB");
    }
}
