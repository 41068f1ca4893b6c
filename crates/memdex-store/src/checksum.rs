//! The one checksum of the store's files: XXH3-64 (the `xxhash-rust` crate) over a file's
//! whole bytes, written in the manifest as `"xxh3:<16 hex digits>"` when the file is sealed.
//! The manifest carries its own the same way (see `manifest`). A leaf: nothing here reads a
//! store.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

const PREFIX: &str = "xxh3:";

/// XXH3-64 of a file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Checksum(u64);

impl Checksum {
    /// The checksum of `bytes`.
    pub fn of(bytes: &[u8]) -> Checksum {
        Checksum(xxhash_rust::xxh3::xxh3_64(bytes))
    }

    /// The checksum of the file at `path`, read in pieces (never held whole).
    pub fn of_file(path: &std::path::Path) -> std::io::Result<Checksum> {
        use std::io::Read;
        let mut f = std::fs::File::open(path)?;
        let mut h = xxhash_rust::xxh3::Xxh3Default::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => h.update(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Checksum(h.digest()))
    }
}

impl fmt::Display for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{:016x}", self.0)
    }
}

impl FromStr for Checksum {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s
            .strip_prefix(PREFIX)
            .filter(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| format!("checksum {s:?} is not {PREFIX}<16 hex digits>"))?;
        u64::from_str_radix(hex, 16)
            .map(Checksum)
            .map_err(|e| e.to_string())
    }
}

impl Serialize for Checksum {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Checksum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips_and_bad_forms_are_refused() {
        let c = Checksum::of(b"memdex");
        let text = c.to_string();
        assert!(text.starts_with("xxh3:") && text.len() == 21, "{text}");
        assert_eq!(text.parse::<Checksum>(), Ok(c));
        assert_eq!(serde_json::to_string(&c).ok(), Some(format!("\"{text}\"")));
        for bad in [
            "",
            "xxh3:",
            "crc:0123456789abcdef",
            "xxh3:0123456789abcdeg",
            "xxh3:12",
        ] {
            assert!(bad.parse::<Checksum>().is_err(), "{bad}");
        }
        assert_ne!(Checksum::of(b"memdex"), Checksum::of(b"memdey"));
        let tmp = std::env::temp_dir().join(format!("memdex-checksum-{}", std::process::id()));
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&tmp, &big).ok();
        assert_eq!(Checksum::of_file(&tmp).ok(), Some(Checksum::of(&big)));
        let _ = std::fs::remove_file(&tmp);
    }
}
