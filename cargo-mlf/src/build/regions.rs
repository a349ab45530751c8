//! The memory regions of a firmware and what fills them: the regions of the crate's linker
//! script (`memory.x`, `MEMORY { FLASH : ORIGIN = …, LENGTH = … }` as cortex-m-rt and riscv-rt
//! crates write it), and after the link, per region, the bytes its sections take (measured from
//! the ELF) plus, in the region that holds the stack, mlf's stack bound for `run()` and the
//! application's own stack (declared: `board = { stack = "4 KiB" }`), against its length.

use std::path::Path;

use mlf_build::Error;
use object::{Object, ObjectSection, SectionFlags};
use serde::Serialize;

/// One region of `MEMORY { … }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Region {
    /// Its name (`RAM`, `FLASH`, `DTCM`).
    pub name: String,
    /// Its first address.
    pub origin: u64,
    /// Its bytes.
    pub length: u64,
}

impl Region {
    fn holds(&self, addr: u64) -> bool {
        addr >= self.origin && addr - self.origin < self.length
    }
}

/// Removes `/* … */` and `// …` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = rest[i + 2..].find("*/").map_or("", |j| &rest[i + 2 + j + 2..]);
    }
    out.push_str(rest);
    out.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// A number of a linker script: decimal, `0x` hexadecimal or octal-free, with an optional `K`
/// or `M` suffix; `a + b` sums.
fn number(expr: &str) -> Option<u64> {
    expr.split('+').try_fold(0u64, |sum, term| {
        let t = term.trim();
        let (digits, scale) = match t.as_bytes().last()? {
            b'K' | b'k' => (&t[..t.len() - 1], 1024),
            b'M' | b'm' => (&t[..t.len() - 1], 1024 * 1024),
            _ => (t, 1),
        };
        let n = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16).ok()?,
            None => digits.parse::<u64>().ok()?,
        };
        sum.checked_add(n.checked_mul(scale)?)
    })
}

/// The regions of the `MEMORY` command of a linker script's `text` (read from `file`, for
/// messages). No `MEMORY` command: no regions.
pub fn parse(text: &str, file: &Path) -> Result<Vec<Region>, Error> {
    let text = strip_comments(text);
    let Some(start) = text.find("MEMORY") else { return Ok(Vec::new()) };
    let after = &text[start + "MEMORY".len()..];
    let (Some(open), Some(close)) = (after.find('{'), after.find('}')) else {
        return Err(Error::invalid("MEMORY has no `{ … }` block").in_file(file));
    };
    let mut regions = Vec::new();
    for entry in after[open + 1..close].lines().map(str::trim).filter(|l| !l.is_empty()) {
        let bad = || {
            Error::invalid(format!("cannot read the MEMORY entry `{entry}` (NAME : ORIGIN = …, LENGTH = …)"))
                .in_file(file)
        };
        let (head, body) = entry.split_once(':').ok_or_else(bad)?;
        let name = head.split('(').next().unwrap_or("").trim().to_string();
        let (mut origin, mut length) = (None, None);
        for part in body.split(',') {
            let (key, value) = part.split_once('=').ok_or_else(bad)?;
            let value = number(value).ok_or_else(bad)?;
            match key.trim() {
                "ORIGIN" | "org" | "o" => origin = Some(value),
                "LENGTH" | "len" | "l" => length = Some(value),
                _ => return Err(bad()),
            }
        }
        match (origin, length) {
            (Some(origin), Some(length)) if !name.is_empty() => regions.push(Region { name, origin, length }),
            _ => return Err(bad()),
        }
    }
    Ok(regions)
}

/// The input sections each output section of the script's `SECTIONS` takes, with the region it
/// goes to (`.psram (NOLOAD) : { *(.psram .psram.*); } > PSRAM` gives `(".psram", "PSRAM")` and
/// `(".psram.*", "PSRAM")`): each input-section pattern of a `{ … }` block followed by `> REGION`.
pub fn placements(text: &str) -> Vec<(String, String)> {
    let text = strip_comments(text);
    let mut out = Vec::new();
    for (close, _) in text.match_indices('}') {
        let after = text[close + 1..].trim_start();
        let Some(region) = after.strip_prefix('>') else { continue };
        let region: String = region.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // The block's own `{`: no brace between it and this `}` (an output section's body).
        let Some(open) = text[..close].rfind(['{', '}']).filter(|&i| text.as_bytes()[i] == b'{') else { continue };
        let body = &text[open + 1..close];
        for pattern in body.split(|c: char| c.is_whitespace() || "();".contains(c)) {
            if pattern.starts_with('.') && !region.is_empty() {
                out.push((pattern.to_string(), region.clone()));
            }
        }
    }
    out
}

/// The region the input section `section` goes to by `placements` (a pattern ending in `*`
/// takes every name it starts).
pub fn region_of<'a>(section: &str, placements: &'a [(String, String)]) -> Option<&'a str> {
    placements
        .iter()
        .find(|(p, _)| p.strip_suffix('*').map_or(p == section, |prefix| section.starts_with(prefix)))
        .map(|(_, r)| r.as_str())
}

/// What fills one region after the link.
#[derive(Clone, Debug, Serialize)]
pub struct Use {
    /// The region.
    pub region: Region,
    /// Each section in it (by its run address, or its load address for initial values kept in
    /// another region): name and bytes, measured from the ELF.
    pub sections: Vec<(String, u64)>,
    /// mlf's bound of the stack `run()` needs (the deepest model's), in the stack's region.
    pub models_stack: Option<u64>,
    /// The application's own stack, as declared, in the stack's region.
    pub app_stack: Option<u64>,
}

impl Use {
    /// Bytes used: sections + stacks.
    pub fn used(&self) -> u64 {
        self.sections.iter().map(|s| s.1).sum::<u64>() + self.models_stack.unwrap_or(0) + self.app_stack.unwrap_or(0)
    }

    /// The items and their bytes, for messages: `.bss 3000 (ELF), run() stack 1148 (bound)`.
    pub fn items(&self) -> String {
        let mut items: Vec<String> = self.sections.iter().map(|(n, b)| format!("{n} {b} (ELF)")).collect();
        if let Some(s) = self.models_stack {
            items.push(format!("stack of run() {s} (mlf's bound)"));
        }
        if let Some(s) = self.app_stack {
            items.push(format!("application stack {s} (declared)"));
        }
        if items.is_empty() { "nothing".into() } else { items.join(", ") }
    }
}

/// The use of every region of `regions` by the ELF at `exe`, the stacks in `stack_region`.
pub fn measure(
    exe: &Path,
    regions: &[Region],
    stack_region: &str,
    (models_stack, app_stack): (Option<u64>, Option<u64>),
) -> Result<Vec<Use>, Error> {
    let data = std::fs::read(exe).map_err(|e| Error::from(e).in_file(exe))?;
    let file = object::File::parse(&*data).map_err(|e| Error::invalid(format!("not an ELF file: {e}")).in_file(exe))?;
    let segments = load_addresses(&data);
    let load_of =
        |addr: u64| segments.iter().find(|&&(v, _, n)| addr >= v && addr - v < n).map(|&(v, p, _)| p + (addr - v));
    let mut uses: Vec<Use> = regions
        .iter()
        .map(|r| Use { region: r.clone(), sections: Vec::new(), models_stack: None, app_stack: None })
        .collect();
    for s in file.sections() {
        let SectionFlags::Elf { sh_flags } = s.flags() else { continue };
        let name = s.name().unwrap_or("").to_string();
        if sh_flags & 0x2 == 0 || s.size() == 0 || name == ".stack" || name == ".heap" {
            continue;
        }
        let run = s.address();
        if let Some(u) = uses.iter_mut().find(|u| u.region.holds(run)) {
            u.sections.push((name.clone(), s.size()));
        }
        // Initial values loaded elsewhere (`.data` in flash) count in that region too.
        let with_contents = s.kind() != object::SectionKind::UninitializedData;
        if let Some(load) = load_of(run).filter(|&l| l != run && with_contents) {
            if let Some(u) = uses.iter_mut().find(|u| u.region.holds(load)) {
                u.sections.push((format!("{name} (initial values)"), s.size()));
            }
        }
    }
    if let Some(u) = uses.iter_mut().find(|u| u.region.name == stack_region) {
        u.models_stack = models_stack;
        u.app_stack = app_stack;
    }
    Ok(uses)
}

/// (run address, load address, bytes in memory) of each program header (32- or 64-bit ELF).
fn load_addresses(data: &[u8]) -> Vec<(u64, u64, u64)> {
    use object::read::elf::{FileHeader, ProgramHeader};
    fn of<F: FileHeader<Endian = object::Endianness>>(data: &[u8]) -> Option<Vec<(u64, u64, u64)>> {
        let f = F::parse(data).ok()?;
        let e = f.endian().ok()?;
        let headers = f.program_headers(e, data).ok()?;
        Some(headers.iter().map(|h| (h.p_vaddr(e).into(), h.p_paddr(e).into(), h.p_memsz(e).into())).collect())
    }
    of::<object::elf::FileHeader32<object::Endianness>>(data)
        .or_else(|| of::<object::elf::FileHeader64<object::Endianness>>(data))
        .unwrap_or_default()
}

/// The regions over their length: an error naming each region, its items and the bytes over.
pub fn check(subject: &str, uses: &[Use]) -> Result<(), Error> {
    let over: Vec<String> = uses
        .iter()
        .filter(|u| u.used() > u.region.length)
        .map(|u| {
            format!(
                "region {} ({} bytes at {:#x}) is over by {} bytes: {} bytes of {}",
                u.region.name,
                u.region.length,
                u.region.origin,
                u.used() - u.region.length,
                u.used(),
                u.items()
            )
        })
        .collect();
    if over.is_empty() {
        return Ok(());
    }
    Err(Error::invalid(format!("{subject} does not fit its memory regions: {}", over.join("; "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cortex_m_rt_and_riscv_rt_memory_x() {
        let text = "/* chip */\nMEMORY\n{\n  FLASH : ORIGIN = 0x08000000, LENGTH = 512K\n  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 128K // main\n  DTCM : org = 0x20000000 + 0x20000, len = 64K\n}\nREGION_ALIAS(\"REGION_TEXT\", FLASH);\n";
        let r = parse(text, Path::new("memory.x")).unwrap();
        assert_eq!(
            r,
            vec![
                Region { name: "FLASH".into(), origin: 0x0800_0000, length: 512 << 10 },
                Region { name: "RAM".into(), origin: 0x2000_0000, length: 128 << 10 },
                Region { name: "DTCM".into(), origin: 0x2002_0000, length: 64 << 10 },
            ]
        );
        assert!(parse("SECTIONS {}", Path::new("x")).unwrap().is_empty());
    }

    #[test]
    fn output_sections_say_which_region_takes_an_input_section() {
        let text = "MEMORY { RAM : ORIGIN = 0, LENGTH = 1K }\nSECTIONS\n{\n  .psram (NOLOAD) : ALIGN(16)\n  {\n    \
                    *(.psram .psram.*); /* arenas */\n  } > PSRAM\n  .dtcm : { KEEP(*(.dtcm)) } > DTCM AT> FLASH\n}\n";
        let p = placements(text);
        assert_eq!(region_of(".psram", &p), Some("PSRAM"));
        assert_eq!(region_of(".psram.kws", &p), Some("PSRAM"));
        assert_eq!(region_of(".dtcm", &p), Some("DTCM"));
        assert_eq!(region_of(".sram2", &p), None);
        assert!(placements("MEMORY { RAM : ORIGIN = 0, LENGTH = 1K }").is_empty());
    }

    #[test]
    fn a_bad_entry_names_the_file_and_the_entry() {
        let e = parse("MEMORY {\n RAM : ORIGIN = 0x2000, LENGTH = lots\n}", Path::new("memory.x")).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("memory.x") && m.contains("`RAM : ORIGIN = 0x2000, LENGTH = lots`"), "{m}");
        assert!(parse("MEMORY {\n RAM : ORIGIN = 0xffffffffffffffff, LENGTH = 2M\n}", Path::new("m")).is_ok());
        assert!(parse("MEMORY {\n RAM : ORIGIN = 0, LENGTH = 99999999999999999M\n}", Path::new("m")).is_err());
    }

    #[test]
    fn over_by_one_byte_names_region_items_and_bytes() {
        let u = Use {
            region: Region { name: "RAM".into(), origin: 0x2000_0000, length: 1000 },
            sections: vec![(".bss".into(), 800)],
            models_stack: Some(100),
            app_stack: Some(101),
        };
        let m = check("firmware fw", &[u.clone()]).unwrap_err().to_string();
        assert!(m.contains("region RAM (1000 bytes at 0x20000000) is over by 1 bytes: 1001 bytes of .bss 800 (ELF), stack of run() 100 (mlf's bound), application stack 101 (declared)"), "{m}");
        assert!(check("fw", &[Use { app_stack: Some(100), ..u }]).is_ok());
    }
}
