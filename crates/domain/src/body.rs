//! Weight, its trend and the body-mass index; water. Weights are whole hectograms (tenths of a
//! kilogram): the contract allows one decimal, and integers add up exactly.

use chrono::{Duration, NaiveDate};

/// Lightest and heaviest weight accepted, in hectograms (20.0 and 400.0 kg).
pub const WEIGHT_HG: std::ops::RangeInclusive<i32> = 200..=4000;
/// Height bounds, in centimetres.
pub const HEIGHT_CM: std::ops::RangeInclusive<i16> = 100..=250;
/// One drink's bounds and the daily goal's, in millilitres.
pub const WATER_ML: std::ops::RangeInclusive<i32> = 50..=2000;
pub const WATER_GOAL_ML: std::ops::RangeInclusive<i32> = 500..=6000;
/// Drinks a person may record on one day.
pub const MAX_WATER_PER_DAY: i64 = 50;
/// Days a trend point averages over, the day itself included.
pub const TREND_DAYS: i64 = 7;

/// Kilograms with at most one decimal as hectograms, or `None` when the number has more
/// decimals or lies outside [`WEIGHT_HG`].
pub fn hectograms(kg: f64) -> Option<i32> {
    if !kg.is_finite() {
        return None;
    }
    let tenths = kg * 10.0;
    let rounded = tenths.round();
    // Binary floating point cannot hold 72.3 exactly; a one-decimal number is within a hair of a
    // whole number of tenths, a two-decimal one is not.
    if (tenths - rounded).abs() > 1e-6
        || rounded < f64::from(*WEIGHT_HG.start())
        || rounded > f64::from(*WEIGHT_HG.end())
    {
        return None;
    }
    Some(rounded as i32)
}

/// Hectograms as kilograms for the wire.
pub fn kilograms(hg: i32) -> f64 {
    f64::from(hg) / 10.0
}

/// For each day that has a weight, the mean of the weights of the [`TREND_DAYS`] days ending on
/// it, rounded to one decimal (half away from zero). `weights` is (day, hectograms) in any order,
/// at most one per day, and should reach back [`TREND_DAYS`] − 1 days before the first day the
/// caller shows.
pub fn trend(weights: &[(NaiveDate, i32)]) -> Vec<(NaiveDate, f64)> {
    let mut sorted = weights.to_vec();
    sorted.sort_by_key(|(day, _)| *day);
    let mut out = Vec::with_capacity(sorted.len());
    let mut first = 0;
    let mut sum: i64 = 0;
    for (i, (day, hg)) in sorted.iter().enumerate() {
        sum += i64::from(*hg);
        while sorted[first].0 <= *day - Duration::days(TREND_DAYS) {
            sum -= i64::from(sorted[first].1);
            first += 1;
        }
        let count = (i - first + 1) as i64;
        // The mean in hectograms is the trend in tenths of a kilogram: round it to a whole number.
        let tenths = (2 * sum + count).div_euclid(2 * count);
        out.push((*day, tenths as f64 / 10.0));
    }
    out
}

/// The body-mass index of a weight and height, to one decimal.
pub fn bmi(hg: i32, height_cm: i16) -> f64 {
    let metres = f64::from(height_cm) / 100.0;
    let value = kilograms(hg) / (metres * metres);
    (value * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        s.parse().expect("a date")
    }

    #[test]
    fn one_decimal_is_accepted_and_two_are_not() {
        assert_eq!(hectograms(72.3), Some(723));
        assert_eq!(hectograms(72.0), Some(720));
        assert_eq!(hectograms(20.0), Some(200));
        assert_eq!(hectograms(400.0), Some(4000));
        assert_eq!(hectograms(72.35), None);
        assert_eq!(hectograms(19.9), None);
        assert_eq!(hectograms(400.1), None);
        assert_eq!(hectograms(f64::NAN), None);
        assert_eq!(hectograms(f64::INFINITY), None);
    }

    #[test]
    fn the_trend_averages_the_seven_days_ending_on_each_day() {
        let t = trend(&[
            (day("2026-03-08"), 800),
            (day("2026-03-01"), 810),
            (day("2026-03-02"), 805),
        ]);
        assert_eq!(
            t,
            vec![
                (day("2026-03-01"), 81.0),
                (day("2026-03-02"), 80.8), // (81.0 + 80.5) / 2 = 80.75, half away from zero
                // 1 March is eight days before: out of the window ending on the 8th.
                (day("2026-03-08"), 80.3), // (80.5 + 80.0) / 2 = 80.25
            ]
        );
    }

    #[test]
    fn bmi_has_one_decimal() {
        assert_eq!(bmi(700, 175), 22.9);
        assert_eq!(bmi(907, 180), 28.0);
    }
}
