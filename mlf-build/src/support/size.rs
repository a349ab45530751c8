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

/// Parses a size: `"65536"`, `"64 KiB"`, `"64KiB"`, `"1.5 MiB"`, `"512 kB"`, `"100 B"`.
///
/// Binary units (`KiB`, `MiB`, `GiB`) are powers of 1024, decimal ones (`kB`, `MB`, `GB`) powers
/// of 1000. `KB` and bare `K`/`M`/`G` are refused as ambiguous. The result must be a whole
/// number of bytes.
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let s = text.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = (s[..split].trim(), s[split..].trim());
    if num.is_empty() {
        return Err(format!(
            "{text:?} is not a size: expected a number of bytes or a number with a unit such as \"64 KiB\""
        ));
    }
    let mult: u64 = match unit {
        "" | "B" | "b" | "byte" | "bytes" => 1,
        "KiB" | "kiB" | "Ki" => 1 << 10,
        "MiB" | "Mi" => 1 << 20,
        "GiB" | "Gi" => 1 << 30,
        "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KB" | "K" | "k" | "M" | "G" => {
            return Err(format!(
                "{text:?}: the unit {unit:?} is ambiguous; write KiB/MiB/GiB (powers of 1024) or kB/MB/GB (powers of 1000)"
            ));
        }
        other => return Err(format!("{text:?}: unknown unit {other:?} (expected B, KiB, MiB, GiB, kB, MB or GB)")),
    };
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if frac.contains('.') || (int.is_empty() && frac.is_empty()) {
        return Err(format!("{text:?} is not a number"));
    }
    let too_big = || format!("{text:?} is too large");
    let int_v: u64 = if int.is_empty() { 0 } else { int.parse().map_err(|_| too_big())? };
    let mut value = int_v.checked_mul(mult).ok_or_else(too_big)?;
    if !frac.is_empty() {
        if frac.len() > 9 {
            return Err(format!("{text:?}: too many decimals"));
        }
        let scale = 10u64.pow(frac.len() as u32);
        let frac_v: u64 = frac.parse().map_err(|_| format!("{text:?} is not a number"))?;
        let part = (frac_v as u128) * (mult as u128);
        if part % scale as u128 != 0 {
            return Err(format!("{text:?} is not a whole number of bytes"));
        }
        value = value.checked_add((part / scale as u128) as u64).ok_or_else(too_big)?;
    }
    Ok(value)
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
