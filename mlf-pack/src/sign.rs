//! Ed25519 signatures over packs (`ed25519-compact`): verification everywhere (`no_std`), and
//! with the feature `sign`, signing and PEM keys (PKCS#8 private keys, SubjectPublicKeyInfo
//! public keys: what `openssl genpkey -algorithm ed25519` writes).

/// Whether `signature` is a valid Ed25519 signature of `message` under the public key `key`.
pub fn verify(message: &[u8], signature: &[u8], key: &[u8; 32]) -> bool {
    let Ok(key) = ed25519_compact::PublicKey::from_slice(key) else { return false };
    let Ok(sig) = ed25519_compact::Signature::from_slice(signature) else { return false };
    key.verify(message, &sig).is_ok()
}

/// A private key for signing packs.
#[cfg(feature = "sign")]
pub struct SigningKey(ed25519_compact::KeyPair);

#[cfg(feature = "sign")]
impl SigningKey {
    /// Reads a PEM private key (PKCS#8, `-----BEGIN PRIVATE KEY-----`); `None` if it is not one.
    pub fn from_pem(pem: &str) -> Option<SigningKey> {
        let sk = ed25519_compact::SecretKey::from_pem(pem).ok()?;
        let pk = sk.public_key();
        Some(SigningKey(ed25519_compact::KeyPair { pk, sk }))
    }

    /// The key of a 32-byte seed.
    pub fn from_seed(seed: [u8; 32]) -> SigningKey {
        SigningKey(ed25519_compact::KeyPair::from_seed(ed25519_compact::Seed::new(seed)))
    }

    /// A new random key.
    #[cfg(feature = "keygen")]
    pub fn generate() -> SigningKey {
        SigningKey(ed25519_compact::KeyPair::generate())
    }

    /// The private key in PEM (PKCS#8).
    pub fn to_pem(&self) -> std::string::String {
        self.0.sk.to_pem()
    }

    /// The public key's 32 bytes.
    pub fn public(&self) -> [u8; 32] {
        *self.0.pk
    }

    /// The signature of `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        *self.0.sk.sign(message, None)
    }
}

/// Reads a PEM public key (`-----BEGIN PUBLIC KEY-----`); `None` if it is not an Ed25519 one.
#[cfg(feature = "sign")]
pub fn public_from_pem(pem: &str) -> Option<[u8; 32]> {
    ed25519_compact::PublicKey::from_pem(pem).ok().map(|k| *k)
}

/// The public key `key` in PEM.
#[cfg(feature = "sign")]
pub fn public_to_pem(key: &[u8; 32]) -> std::string::String {
    ed25519_compact::PublicKey::new(*key).to_pem()
}

/// The model digest of `parts` (SHA-512 of them in order, each preceded by its length, cut to
/// 32 bytes): what binds a pack to the code that reads it.
pub fn digest<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> [u8; 32] {
    let mut h = ed25519_compact::sha512::Hash::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let full = h.finalize();
    let mut out = [0u8; 32];
    out.copy_from_slice(&full[..32]);
    out
}

#[cfg(all(test, feature = "sign"))]
mod tests {
    use super::*;

    #[test]
    fn signed_verifies_and_other_keys_or_bytes_do_not() {
        let k = SigningKey::from_seed([7; 32]);
        let other = SigningKey::from_seed([8; 32]);
        let sig = k.sign(b"pack");
        assert!(verify(b"pack", &sig, &k.public()));
        assert!(!verify(b"pack", &sig, &other.public()));
        assert!(!verify(b"pacK", &sig, &k.public()));
        let pem = k.to_pem();
        assert_eq!(SigningKey::from_pem(&pem).map(|k| k.public()), Some(k.public()));
        assert_eq!(public_from_pem(&public_to_pem(&k.public())), Some(k.public()));
    }
}
