use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime};
use memdex_core::clip;

/// The earliest year a date may name (four-digit years only).
pub const MIN_YEAR: i32 = 1000;
/// The latest year a date may name.
pub const MAX_YEAR: i32 = 9999;

/// Dates must name a year in [`MIN_YEAR`]..=[`MAX_YEAR`] (as written, before any offset is
/// applied). chrono itself reads signed years of any length (`+262142-12-31`), at the edge of
/// what its date arithmetic can hold; no chat history needs them.
pub(crate) fn check_year(year: i32) -> Result<(), String> {
    if (MIN_YEAR..=MAX_YEAR).contains(&year) {
        Ok(())
    } else {
        Err(format!(
            "year {year} is outside the supported range {MIN_YEAR} to {MAX_YEAR}"
        ))
    }
}

/// Parses a session date into milliseconds since the Unix epoch.
///
/// Accepted: RFC 3339 (`2023-05-30T23:40:00Z`, any offset), LongMemEval's
/// `YYYY/MM/DD (Day) HH:MM`, and `YYYY-MM-DD[ HH:MM[:SS]]`. Forms without an offset are UTC.
/// For the LongMemEval form the weekday in parentheses must match the date. The year must be
/// in [`MIN_YEAR`]..=[`MAX_YEAR`]. Errors quote at most a short prefix of the input.
pub fn parse_date(s: &str) -> Result<i64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty date".into());
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        check_year(dt.year())?;
        return Ok(dt.timestamp_millis());
    }
    if let Some(dt) = parse_longmemeval(t)? {
        return Ok(dt.and_utc().timestamp_millis());
    }
    for fmt in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(t, fmt) {
            check_year(dt.year())?;
            return Ok(dt.and_utc().timestamp_millis());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        check_year(d.year())?;
        return Ok(d
            .and_time(chrono::NaiveTime::MIN)
            .and_utc()
            .timestamp_millis());
    }
    Err("expected RFC 3339, \"YYYY/MM/DD (Day) HH:MM\" or \"YYYY-MM-DD[ HH:MM[:SS]]\"".into())
}

/// `2023/05/30 (Tue) 23:40`. Ok(None) when the text is not of this shape at all.
fn parse_longmemeval(t: &str) -> Result<Option<NaiveDateTime>, String> {
    let Some((date, rest)) = t.split_once(" (") else {
        return Ok(None);
    };
    let Some((day, time)) = rest.split_once(") ") else {
        return Ok(None);
    };
    let Ok(dt) = NaiveDateTime::parse_from_str(&format!("{date} {time}"), "%Y/%m/%d %H:%M") else {
        return Err(format!(
            "not a valid date/time in \"YYYY/MM/DD (Day) HH:MM\" form: {:?}",
            clip(t, 64)
        ));
    };
    check_year(dt.year())?;
    let actual = dt.format("%a").to_string();
    if !actual.eq_ignore_ascii_case(day) {
        return Err(format!(
            "weekday ({}) does not match the date, which is a {actual}",
            clip(day, 16)
        ));
    }
    Ok(Some(dt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_supported_forms() {
        let want = 1_685_490_000_000; // 2023-05-30T23:40:00Z
        assert_eq!(parse_date("2023-05-30T23:40:00Z"), Ok(want));
        assert_eq!(parse_date("2023-05-31T01:40:00+02:00"), Ok(want));
        assert_eq!(parse_date("2023/05/30 (Tue) 23:40"), Ok(want));
        assert_eq!(parse_date("2023-05-30 23:40"), Ok(want));
        assert_eq!(parse_date("2023-05-30"), Ok(want - (23 * 60 + 40) * 60_000));
    }

    #[test]
    fn rejects_bad_dates() {
        assert!(parse_date("").is_err());
        assert!(parse_date("yesterday").is_err());
        assert!(parse_date("2023/02/30 (Thu) 10:00").is_err());
        let e = parse_date("2023/05/30 (Mon) 23:40").unwrap_err();
        assert!(e.contains("Tue"), "{e}");
    }

    #[test]
    fn years_are_four_digits() {
        assert!(parse_date("1000-01-01").is_ok());
        assert!(parse_date("9999-12-31T23:59:59Z").is_ok());
        assert!(
            parse_date("9999-12-31T23:59:59-23:59").is_ok(),
            "the year as written"
        );
        for bad in [
            "+262142-12-31",
            "-262143-01-01",
            "+262142-12-31 10:00",
            "+262142-12-31T10:00:00",
            "0999-12-31",
            "0000-01-01T00:00:00Z",
            "+10000-01-01",
            "-0001-01-01",
            "+262142/12/31 (Fri) 10:00",
        ] {
            let e = parse_date(bad).unwrap_err();
            assert!(
                e.contains("outside the supported range 1000 to 9999"),
                "{bad}: {e}"
            );
        }
        let e = parse_date("+262142-12-31").unwrap_err();
        assert!(e.contains("year 262142"), "{e}");
    }

    #[test]
    fn errors_quote_only_a_prefix() {
        let huge = format!("2023/05/30 ({}) 23:40", "x".repeat(1 << 20));
        let e = parse_date(&huge).unwrap_err();
        assert!(e.len() < 200, "{} bytes", e.len());
        let huge = format!("{} (Tue) 23:40", "9".repeat(1 << 20));
        let e = parse_date(&huge).unwrap_err();
        assert!(e.len() < 200, "{} bytes", e.len());
    }
}
