//! ISO 8601 / RFC 3339 timestamps as the sources write them, turned into seconds so that
//! durations can be derived from a start and an end (docs/record.md, `duration_seconds`).

/// Seconds since 1970-01-01T00:00:00Z of `YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|±HH:MM]`;
/// a timestamp without a zone is read as UTC (only differences of two are used).
/// `None` for anything else.
pub fn unix_seconds(ts: &str) -> Option<f64> {
    parts(ts).map(|(whole, fraction)| whole as f64 + fraction)
}

/// Seconds from `start` to `end` when both parse and the end is not before the start.
/// Whole seconds and fractions are subtracted apart: no precision is lost to the epoch.
pub fn seconds_between(start: &str, end: &str) -> Option<f64> {
    let (a, fa) = parts(start)?;
    let (b, fb) = parts(end)?;
    let d = (b - a) as f64 + (fb - fa);
    (d >= 0.0).then_some(d)
}

/// Whole seconds since the epoch and the fraction of a second.
fn parts(ts: &str) -> Option<(i64, f64)> {
    let b = ts.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' {
        return None;
    }
    if b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = ts.get(r)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &ts[19..];
    let mut fraction = 0.0;
    if let Some(f) = rest.strip_prefix('.') {
        let digits = f.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        fraction = format!("0.{}", &f[..digits]).parse().ok()?;
        rest = &f[digits..];
    }
    let offset = zone_offset(rest)?;
    let days = days_from_civil(year, month, day);
    Some((days * 86_400 + hour * 3_600 + minute * 60 + second - offset, fraction))
}

/// Offset in seconds of `Z`, `±HH:MM`, `±HHMM` or nothing (UTC).
fn zone_offset(zone: &str) -> Option<i64> {
    match zone {
        "" | "Z" | "z" => return Some(0),
        _ => {}
    }
    let sign = match zone.as_bytes()[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = zone[1..].chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let hours: i64 = digits[..2].parse().ok()?;
    let minutes: i64 = digits[2..].parse().ok()?;
    Some(sign * (hours * 3_600 + minutes * 60))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DDTHH:MM:SS.fffffffffZ` of nanoseconds since the epoch (OTLP's
/// `startTimeUnixNano`), for sources that state times only as numbers; `None` past 9999.
pub fn iso_from_unix_nanos(nanos: u128) -> Option<String> {
    let secs = i64::try_from(nanos / 1_000_000_000).ok()?;
    let frac = nanos % 1_000_000_000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    if year > 9999 {
        return None;
    }
    let (h, m, s) = (rem / 3_600, rem % 3_600 / 60, rem % 60);
    Some(format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{frac:09}Z"))
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (the inverse of
/// `days_from_civil`, Howard Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_of_every_shape_the_sources_write() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(unix_seconds("2000-03-01T00:00:00Z"), Some(951_868_800.0));
        assert_eq!(unix_seconds("2000-03-01T01:00:00+01:00"), Some(951_868_800.0));
        assert_eq!(unix_seconds("2000-03-01 00:00:00.25"), Some(951_868_800.25));
        assert_eq!(unix_seconds("2000-03-01T00:00:00.5-0130"), Some(951_874_200.5));
        for bad in ["", "2000-03-01", "2000-13-01T00:00:00Z", "2000-03-01T00:00:00.Z", "2000-03-01T00:00:00+1", "x"] {
            assert_eq!(unix_seconds(bad), None, "{bad}");
        }
        assert_eq!(
            seconds_between("2026-02-26T06:45:21.371891Z", "2026-02-26T06:46:30.823937Z").map(|s| (s * 1e6).round()),
            Some(69_452_046.0)
        );
        assert_eq!(seconds_between("2000-01-02T00:00:00Z", "2000-01-01T00:00:00Z"), None);
    }

    #[test]
    fn nanoseconds_since_the_epoch_as_iso_and_back() {
        assert_eq!(iso_from_unix_nanos(0).as_deref(), Some("1970-01-01T00:00:00.000000000Z"));
        let iso = iso_from_unix_nanos(1_792_489_224_994_417_000).expect("in range");
        assert_eq!(iso, "2026-10-20T09:40:24.994417000Z");
        assert_eq!(unix_seconds(&iso).map(|s| s.round()), Some(1_792_489_225.0));
        assert_eq!(iso_from_unix_nanos(951_868_800_000_000_000).as_deref(), Some("2000-03-01T00:00:00.000000000Z"));
        assert_eq!(iso_from_unix_nanos(u128::MAX), None);
    }
}
