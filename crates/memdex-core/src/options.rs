use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::CoreError;

macro_rules! choice_enum {
    ($(#[$m:meta])* $name:ident, $what:literal, { $($(#[$vm:meta])* $var:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum $name { $($(#[$vm])* $var),+ }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s),+ }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
        impl FromStr for $name {
            type Err = CoreError;
            fn from_str(s: &str) -> Result<Self, CoreError> {
                match s {
                    $($s => Ok($name::$var),)+
                    _ => Err(CoreError::InvalidChoice {
                        what: $what,
                        value: s.to_string(),
                        expected: concat!($($s, " "),+),
                    }),
                }
            }
        }
    };
}

choice_enum!(
    /// What one memory item covers.
    Granularity, "granularity", {
        /// A whole session.
        Session => "session",
        /// One user message with the assistant reply that follows it.
        Round => "round",
        /// One message.
        Turn => "turn",
    }
);

choice_enum!(
    /// Which speakers' words form an item's key (the embedded text).
    KeyRoles, "key roles", {
        User => "user",
        All => "all",
    }
);

choice_enum!(
    /// What to do with a malformed input record.
    OnError, "on-error policy", {
        /// Stop at the first bad record; nothing from this run is committed.
        Abort => "abort",
        /// Report the record (file and line) and go on.
        Skip => "skip",
    }
);

/// Compute device requested by the user: `auto`, `cpu`, `cuda` or `cuda:N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// CUDA device 0 when the build and machine have one, else CPU.
    #[default]
    Auto,
    Cpu,
    Cuda(usize),
}

impl FromStr for DeviceChoice {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self, CoreError> {
        let bad = || CoreError::InvalidChoice {
            what: "device",
            value: s.to_string(),
            expected: "auto, cpu, cuda, cuda:N",
        };
        match s {
            "auto" => Ok(DeviceChoice::Auto),
            "cpu" => Ok(DeviceChoice::Cpu),
            "cuda" => Ok(DeviceChoice::Cuda(0)),
            _ => s
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(DeviceChoice::Cuda)
                .ok_or_else(bad),
        }
    }
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceChoice::Auto => f.write_str("auto"),
            DeviceChoice::Cpu => f.write_str("cpu"),
            DeviceChoice::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_choices_and_rejects_unknown() {
        assert_eq!("round".parse::<Granularity>(), Ok(Granularity::Round));
        assert_eq!("skip".parse::<OnError>(), Ok(OnError::Skip));
        let err = "rounds".parse::<Granularity>().unwrap_err().to_string();
        assert!(err.contains("session round turn"), "{err}");
    }

    #[test]
    fn parses_devices() {
        assert_eq!("cuda:2".parse::<DeviceChoice>(), Ok(DeviceChoice::Cuda(2)));
        assert_eq!("cuda".parse::<DeviceChoice>(), Ok(DeviceChoice::Cuda(0)));
        assert_eq!("cpu".parse::<DeviceChoice>(), Ok(DeviceChoice::Cpu));
        assert!("gpu".parse::<DeviceChoice>().is_err());
        assert!("cuda:x".parse::<DeviceChoice>().is_err());
        assert_eq!(DeviceChoice::Cuda(1).to_string(), "cuda:1");
    }
}
