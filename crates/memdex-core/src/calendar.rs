//! English calendar words the rule-based stages share (importance, thoughts, time
//! expressions): one list of month names.

/// The English month names, lower case, January first (`MONTH_NAMES[m - 1]` is month `m`).
pub const MONTH_NAMES: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Month 1..=12 of a lower-case full month name.
pub fn month_number(lower: &str) -> Option<u32> {
    let i = MONTH_NAMES.iter().position(|m| *m == lower)?;
    u32::try_from(i + 1).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_number_from_one() {
        assert_eq!(month_number("january"), Some(1));
        assert_eq!(month_number("december"), Some(12));
        assert_eq!(month_number("jan"), None);
    }
}
