//! Link section names a user chooses for a model's arena or parameters (`.dtcm`, `.psram_ro`):
//! what makes one usable in a `#[link_section]` attribute and in the assembler's `.section`
//! directive alike.

/// The longest section name accepted (ELF allows more; no linker script needs more).
pub const MAX_LEN: usize = 128;

/// Why `name` cannot be a link section, or `Ok`: a name is 1 to [`MAX_LEN`] characters among
/// `A-Z a-z 0-9 . _ $`, and does not start with a digit (so that it reads as one word to the
/// assembler and to a linker script's `*(…)` pattern alike).
pub fn check(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '$');
    if name.is_empty() {
        return Err("the link section name is empty (write one such as \".dtcm\" or \".psram\")".into());
    }
    if name.len() > MAX_LEN {
        return Err(format!("the link section name is {} characters long, more than {MAX_LEN}", name.len()));
    }
    if let Some(c) = name.chars().find(|&c| !allowed(c)) {
        return Err(format!(
            "{name:?} is not a usable link section name: {c:?} is not allowed (use letters, digits, `.`, `_` and `$`, \
             as in \".dtcm\" or \".psram_ro\")"
        ));
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("{name:?} is not a usable link section name: it starts with a digit"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn names_a_linker_script_can_place_pass_others_say_why_not() {
        for ok in [".dtcm", ".psram_ro", ".bss.sram2", "ITCM", "$x"] {
            check(ok).unwrap();
        }
        assert!(check("").unwrap_err().contains("empty"));
        assert!(check(".ps ram").unwrap_err().contains("' ' is not allowed"));
        assert!(check(".a\",\"ax\"\n.globl x").unwrap_err().contains("is not allowed"));
        assert!(check("__DATA,__psram").unwrap_err().contains("',' is not allowed"));
        assert!(check("1x").unwrap_err().contains("starts with a digit"));
        assert!(check(&".x".repeat(65)).unwrap_err().contains("more than 128"));
    }
}
