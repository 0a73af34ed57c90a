//! The installation's instance id: a hash of the OS machine id with a product salt, so that the
//! server never sees a raw hardware or OS identifier and other products cannot correlate it.

use std::path::Path;

use sha2::{Digest, Sha256};

/// Product-specific salt of the fingerprint.
const SALT: &[u8] = b"desktop-app licence instance v1\0";

/// The instance id of this machine: 32 hex characters of SHA-256(salt, machine id). Without a
/// readable machine id, a random id is created once and kept in `config_dir`.
pub fn machine_instance_id(config_dir: &Path) -> std::io::Result<String> {
    let machine = match os_machine_id() {
        Some(id) => id,
        None => fallback_id(config_dir)?,
    };
    Ok(instance_id_of(&machine))
}

/// The instance id for a given machine id.
pub fn instance_id_of(machine_id: &str) -> String {
    let digest = Sha256::new()
        .chain_update(SALT)
        .chain_update(machine_id.trim().as_bytes())
        .finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(target_os = "linux")]
fn os_machine_id() -> Option<String> {
    ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

#[cfg(target_os = "macos")]
fn os_machine_id() -> Option<String> {
    let out = std::process::Command::new("ioreg")
        .args(["-rd1", "-c", "IOPlatformExpertDevice"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.contains("IOPlatformUUID"))
        .and_then(|l| l.split('"').nth(3))
        .map(str::to_owned)
}

#[cfg(target_os = "windows")]
fn os_machine_id() -> Option<String> {
    let out = std::process::Command::new("reg")
        .args([
            "query",
            r"HKLM\SOFTWARE\Microsoft\Cryptography",
            "/v",
            "MachineGuid",
        ])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.contains("MachineGuid"))
        .and_then(|l| l.split_whitespace().last())
        .map(str::to_owned)
}

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "windows")))]
fn os_machine_id() -> Option<String> {
    None
}

fn fallback_id(dir: &Path) -> std::io::Result<String> {
    let path = dir.join("machine-id");
    if let Ok(id) = std::fs::read_to_string(&path)
        && !id.trim().is_empty()
    {
        return Ok(id.trim().to_owned());
    }
    let bytes: [u8; 16] = rand::random();
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    crate::store::write_atomically(&path, id.as_bytes())?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn salted_hash_never_the_raw_id() {
        let id = super::instance_id_of("4c4c4544-0042-3510-8051-b4c04f4e4d32");
        assert_eq!(id.len(), 32);
        assert!(!id.contains("4c4c4544"));
        assert_eq!(
            id,
            super::instance_id_of(" 4c4c4544-0042-3510-8051-b4c04f4e4d32\n")
        );
        assert_ne!(id, super::instance_id_of("another machine"));
    }
}
