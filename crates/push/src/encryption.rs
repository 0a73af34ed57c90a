//! Message encryption for Web Push: `aes128gcm` (RFC 8188) with the key agreement of RFC 8291.
//!
//! Done here with `ring` rather than through a Web Push crate on OpenSSL 3: the ephemeral key, the
//! agreement and the record are the whole cost of a push on the sender's side, and OpenSSL 3's
//! key objects (a provider export of each key, and a full public-key check by scalar
//! multiplication on every derive) cost several times the elliptic-curve work itself. The peer's
//! key is still checked to lie on the curve, by `ring` during the agreement.
//!
//! One record carries the whole message (a Web Push payload is at most [`MAX_PAYLOAD`] bytes),
//! padded up to a multiple of [`PADDING_BLOCK`] so that the length reveals less about the text.

use ring::aead::{AES_128_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::agreement::{ECDH_P256, EphemeralPrivateKey, UnparsedPublicKey, agree_ephemeral};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

use crate::sender::MAX_PAYLOAD;

/// The record size announced in the header: one record of at most this many bytes.
const RECORD_SIZE: u32 = 4096;
/// The plaintext and its padding fill whole blocks of this many bytes.
const PADDING_BLOCK: usize = 128;
const SALT_LEN: usize = 16;
const PUBLIC_KEY_LEN: usize = 65;
const TAG_LEN: usize = 16;
/// salt | record size | key id length | key id (the sender's public key).
const HEADER_LEN: usize = SALT_LEN + 4 + 1 + PUBLIC_KEY_LEN;
/// Ends the last record's plaintext (RFC 8188 section 2); zeros follow as padding.
const LAST_RECORD_DELIMITER: u8 = 2;

/// Why a message could not be encrypted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EncryptError {
    #[error("the subscription's public key is not a P-256 point")]
    PeerKey,
    #[error("the subscription's authentication secret must be 16 bytes")]
    AuthSecret,
    #[error("payload of {0} bytes exceeds the limit of {MAX_PAYLOAD} bytes")]
    TooLarge(usize),
    #[error("the system's random number generator failed")]
    Random,
}

/// The `aes128gcm` body of `plaintext` for the subscriber whose public key is `ua_public`
/// (65 bytes, uncompressed) and authentication secret `auth_secret` (16 bytes).
pub(crate) fn encrypt(
    ua_public: &[u8],
    auth_secret: &[u8],
    plaintext: &[u8],
) -> Result<Vec<u8>, EncryptError> {
    if plaintext.len() > MAX_PAYLOAD {
        return Err(EncryptError::TooLarge(plaintext.len()));
    }
    if auth_secret.len() != 16 {
        return Err(EncryptError::AuthSecret);
    }
    if ua_public.len() != PUBLIC_KEY_LEN {
        return Err(EncryptError::PeerKey);
    }
    let rng = SystemRandom::new();
    let as_private =
        EphemeralPrivateKey::generate(&ECDH_P256, &rng).map_err(|_| EncryptError::Random)?;
    let as_public = as_private
        .compute_public_key()
        .map_err(|_| EncryptError::Random)?;
    let mut salt = [0u8; SALT_LEN];
    rng.fill(&mut salt).map_err(|_| EncryptError::Random)?;

    // RFC 8291 section 3.4: IKM = HKDF(auth_secret, ecdh_secret, "WebPush: info" 0 ua as, 32).
    let ikm = agree_ephemeral(
        as_private,
        &UnparsedPublicKey::new(&ECDH_P256, ua_public),
        |ecdh_secret| {
            let prk = hkdf_extract(auth_secret, ecdh_secret);
            let info: [&[u8]; 3] = [b"WebPush: info\0", ua_public, as_public.as_ref()];
            let mut ikm = [0u8; 32];
            ikm.copy_from_slice(hkdf_expand_one(&prk, &info).as_ref());
            ikm
        },
    )
    .map_err(|_| EncryptError::PeerKey)?;

    // RFC 8188 section 2.2 and 2.3: the content key and nonce from the salt.
    let prk = hkdf_extract(&salt, &ikm);
    let mut cek = [0u8; 16];
    cek.copy_from_slice(&hkdf_expand_one(&prk, &[b"Content-Encoding: aes128gcm\0"]).as_ref()[..16]);
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&hkdf_expand_one(&prk, &[b"Content-Encoding: nonce\0"]).as_ref()[..12]);

    let padded_len = (plaintext.len() + 1).div_ceil(PADDING_BLOCK) * PADDING_BLOCK;
    let mut body = Vec::with_capacity(HEADER_LEN + padded_len + TAG_LEN);
    body.extend_from_slice(&salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(PUBLIC_KEY_LEN as u8);
    body.extend_from_slice(as_public.as_ref());
    body.extend_from_slice(plaintext);
    body.push(LAST_RECORD_DELIMITER);
    body.resize(HEADER_LEN + padded_len, 0);
    let key = UnboundKey::new(&AES_128_GCM, &cek).map_err(|_| EncryptError::Random)?;
    // The first (and only) record's nonce is the derived nonce itself (sequence number 0).
    let tag = LessSafeKey::new(key)
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::empty(),
            &mut body[HEADER_LEN..],
        )
        .map_err(|_| EncryptError::Random)?;
    body.extend_from_slice(tag.as_ref());
    Ok(body)
}

fn hkdf_extract(salt: &[u8], ikm: &[u8]) -> hmac::Key {
    let prk = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, salt), ikm);
    hmac::Key::new(hmac::HMAC_SHA256, prk.as_ref())
}

/// The first 32 bytes of HKDF-Expand, for the concatenation of `info`: every length this scheme
/// asks for fits one block.
fn hkdf_expand_one(prk: &hmac::Key, info: &[&[u8]]) -> hmac::Tag {
    let mut context = hmac::Context::with_key(prk);
    for part in info {
        context.update(part);
    }
    context.update(&[1]);
    context.sign()
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::elliptic_curve::sec1::ToEncodedPoint;

    /// Decrypted by an independent implementation (the test kit's, on RustCrypto). RFC 8291's
    /// worked example cannot be replayed: it fixes the sender's private key and salt, which are
    /// drawn at random here and which `ring` never lets a caller choose.
    #[test]
    fn an_independent_implementation_decrypts_every_size() {
        let ua_secret = p256::SecretKey::random(&mut rand_core::OsRng);
        let ua_public = ua_secret.public_key().to_encoded_point(false);
        let auth = [42u8; 16];
        for len in [0, 1, 127, 128, 1000, MAX_PAYLOAD] {
            let plaintext: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let body = encrypt(ua_public.as_bytes(), &auth, &plaintext).expect("encrypts");
            let decrypted = testkit::push_service::decrypt_aes128gcm(&ua_secret, &auth, &body)
                .expect("decrypts");
            assert_eq!(decrypted, plaintext, "{len} bytes");
        }
        let body = encrypt(ua_public.as_bytes(), &auth, b"hello").expect("encrypts");
        assert!(
            testkit::push_service::decrypt_aes128gcm(&ua_secret, &[0u8; 16], &body).is_err(),
            "another authentication secret must not decrypt"
        );
    }

    #[test]
    fn one_padded_record_behind_the_header() {
        let ua = ring::agreement::EphemeralPrivateKey::generate(&ECDH_P256, &SystemRandom::new())
            .expect("key")
            .compute_public_key()
            .expect("public");
        for (len, padded) in [(0, 128), (1, 128), (127, 128), (128, 256), (3052, 3072)] {
            let body = encrypt(ua.as_ref(), &[7u8; 16], &vec![b'x'; len]).expect("encrypts");
            assert_eq!(body.len(), HEADER_LEN + padded + TAG_LEN, "{len}");
            assert_eq!(&body[16..20], &4096u32.to_be_bytes());
            assert_eq!(body[20], 65);
            assert_eq!(body[21], 4, "the key id is an uncompressed point");
        }
    }

    #[test]
    fn bad_keys_and_sizes_are_refused() {
        let ua = ring::agreement::EphemeralPrivateKey::generate(&ECDH_P256, &SystemRandom::new())
            .expect("key")
            .compute_public_key()
            .expect("public");
        let mut off_curve = ua.as_ref().to_vec();
        off_curve[64] ^= 1;
        assert_eq!(
            encrypt(&off_curve, &[7u8; 16], b"hi"),
            Err(EncryptError::PeerKey)
        );
        assert_eq!(
            encrypt(ua.as_ref(), &[7u8; 15], b"hi"),
            Err(EncryptError::AuthSecret)
        );
        assert_eq!(
            encrypt(ua.as_ref(), &[7u8; 16], &vec![0; MAX_PAYLOAD + 1]),
            Err(EncryptError::TooLarge(MAX_PAYLOAD + 1))
        );
    }
}
