//! Writing packs (feature `sign`): what `cargo mlf pack` writes, and what tests make.

use std::vec::Vec;

use crate::header::{BODY_START, HEADER_MEMBER, PackHeader, SIGNATURE_MEMBER};
use crate::sign::SigningKey;
use crate::tar::write_header;

/// How a pack is written.
pub struct PackOptions<'k> {
    /// The sequence number (A/B slots take the larger).
    pub sequence: u64,
    /// The model digest (from the split's `configure.json`).
    pub digest: [u8; 32],
    /// The key to sign with, if any.
    pub key: Option<&'k SigningKey>,
}

/// Appends a member: its header, its bytes, zeros to the next block.
fn append(out: &mut Vec<u8>, name: &str, data: &[u8]) -> Result<(), std::string::String> {
    let mut h = [0u8; 512];
    if !write_header(name.as_bytes(), data.len(), &mut h) {
        return Err(std::format!(
            "{name:?} does not fit a plain ustar header (at most 100 bytes after a prefix of 155, plain components)"
        ));
    }
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
    Ok(())
}

/// The pack of `members` (name, bytes), in that order, after the header member; signed when
/// `options.key` is given. Errors name a member whose name does not fit a plain ustar header.
pub fn write_pack(members: &[(&str, &[u8])], options: &PackOptions<'_>) -> Result<Vec<u8>, std::string::String> {
    let mut out = Vec::new();
    append(&mut out, HEADER_MEMBER, &[0u8; 512])?;
    for (name, data) in members {
        append(&mut out, name, data)?;
    }
    let length = out.len();
    let header = PackHeader {
        sequence: options.sequence,
        length: length as u64,
        digest: options.digest,
        body_xxh64: xxhash_rust::xxh64::xxh64(&out[BODY_START..], 0),
        signed: options.key.is_some(),
    };
    header.encode((&mut out[..BODY_START]).try_into().expect("the header member"));
    if let Some(key) = options.key {
        let signature = key.sign(&out);
        append(&mut out, SIGNATURE_MEMBER, &signature)?;
    }
    out.resize(out.len() + 1024, 0);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PackError, check};

    #[test]
    fn written_packs_check_and_damage_is_refused() {
        let key = SigningKey::from_seed([1; 32]);
        let other = SigningKey::from_seed([2; 32]);
        let members: [(&str, &[u8]); 2] = [("configure.json", b"{}"), ("params/p1.bin", &[5; 700])];
        let opts = PackOptions { sequence: 3, digest: [9; 32], key: Some(&key) };
        let pack = write_pack(&members, &opts).unwrap();
        let c = check(&pack, Some(&[9; 32]), Some(&key.public())).unwrap();
        assert_eq!(c.header.map(|h| h.sequence), Some(3));
        let names: Vec<Vec<u8>> = c.entries(&pack).map(|e| e.unwrap().name.bytes().collect()).collect();
        assert_eq!(names, [&b"configure.json"[..], b"params/p1.bin"]);
        assert_eq!(check(&pack, Some(&[8; 32]), None), Err(PackError::Digest { pack: [9; 32], code: [8; 32] }));
        assert_eq!(check(&pack, Some(&[9; 32]), Some(&other.public())), Err(PackError::Signature));
        let mut damaged = pack.clone();
        damaged[BODY_START + 600] ^= 1;
        assert_eq!(check(&damaged, Some(&[9; 32]), None), Err(PackError::Body));
        let unsigned = write_pack(&members, &PackOptions { key: None, ..opts }).unwrap();
        assert_eq!(check(&unsigned, Some(&[9; 32]), Some(&key.public())), Err(PackError::Unsigned));
        assert!(check(&unsigned, Some(&[9; 32]), None).is_ok());
    }
}
