use chrono::{DateTime, NaiveDate, NaiveDateTime};

/// Parses a session date into milliseconds since the Unix epoch.
///
/// Accepted: RFC 3339 (`2023-05-30T23:40:00Z`, any offset), LongMemEval's
/// `YYYY/MM/DD (Day) HH:MM`, and `YYYY-MM-DD[ HH:MM[:SS]]`. Forms without an offset are UTC.
/// For the LongMemEval form the weekday in parentheses must match the date.
pub fn parse_date(s: &str) -> Result<i64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty date".into());
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(dt.timestamp_millis());
    }
    if let Some(ms) = parse_longmemeval(t)? {
        return Ok(ms);
    }
    for fmt in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(t, fmt) {
            return Ok(dt.and_utc().timestamp_millis());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(d
            .and_time(chrono::NaiveTime::MIN)
            .and_utc()
            .timestamp_millis());
    }
    Err("expected RFC 3339, \"YYYY/MM/DD (Day) HH:MM\" or \"YYYY-MM-DD[ HH:MM[:SS]]\"".into())
}

/// `2023/05/30 (Tue) 23:40`. Ok(None) when the text is not of this shape at all.
fn parse_longmemeval(t: &str) -> Result<Option<i64>, String> {
    let Some((date, rest)) = t.split_once(" (") else {
        return Ok(None);
    };
    let Some((day, time)) = rest.split_once(") ") else {
        return Ok(None);
    };
    let Ok(dt) = NaiveDateTime::parse_from_str(&format!("{date} {time}"), "%Y/%m/%d %H:%M") else {
        return Err(format!(
            "not a valid date/time in \"YYYY/MM/DD (Day) HH:MM\" form: {t:?}"
        ));
    };
    let actual = dt.format("%a").to_string();
    if !actual.eq_ignore_ascii_case(day) {
        return Err(format!(
            "weekday ({day}) does not match the date, which is a {actual}"
        ));
    }
    Ok(Some(dt.and_utc().timestamp_millis()))
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
}
