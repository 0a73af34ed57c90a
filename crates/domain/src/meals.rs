//! Meal-plan slots and the final-meal rule that can start a fast.

use std::fmt;
use std::str::FromStr;

/// Slot categories in their order through the day.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
pub enum MealCategory {
    #[serde(rename = "COL")]
    Col,
    #[serde(rename = "PRA")]
    Pra,
    #[serde(rename = "SPU")]
    Spu,
    #[serde(rename = "CENA")]
    Cena,
}

impl MealCategory {
    /// COL 0, PRA 1, SPU 2, CENA 3.
    pub fn rank(self) -> i16 {
        match self {
            Self::Col => 0,
            Self::Pra => 1,
            Self::Spu => 2,
            Self::Cena => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Col => "COL",
            Self::Pra => "PRA",
            Self::Spu => "SPU",
            Self::Cena => "CENA",
        }
    }
}

impl FromStr for MealCategory {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "COL" => Ok(Self::Col),
            "PRA" => Ok(Self::Pra),
            "SPU" => Ok(Self::Spu),
            "CENA" => Ok(Self::Cena),
            _ => Err(()),
        }
    }
}

impl fmt::Display for MealCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a slot of `category` is the final meal of its day: a dinner always is; in an
/// intermittent-fasting plan, so is a slot of the highest rank among that day's slots
/// (`day_categories`, which include the slot itself).
pub fn is_final_meal(
    category: MealCategory,
    intermittent_fasting: bool,
    day_categories: &[MealCategory],
) -> bool {
    if category == MealCategory::Cena {
        return true;
    }
    intermittent_fasting && day_categories.iter().all(|c| c.rank() <= category.rank())
}

#[cfg(test)]
mod tests {
    use super::MealCategory::{Cena, Col, Pra, Spu};
    use super::*;

    #[test]
    fn ranks_and_names() {
        assert_eq!([Col, Pra, Spu, Cena].map(MealCategory::rank), [0, 1, 2, 3]);
        for c in [Col, Pra, Spu, Cena] {
            assert_eq!(c.as_str().parse::<MealCategory>(), Ok(c));
        }
        assert!("cena".parse::<MealCategory>().is_err());
    }

    #[test]
    fn dinner_is_always_final() {
        assert!(is_final_meal(Cena, false, &[Col, Pra, Cena]));
        assert!(is_final_meal(Cena, true, &[Cena]));
    }

    #[test]
    fn in_a_plain_plan_only_dinner_is_final() {
        assert!(!is_final_meal(Spu, false, &[Col, Pra, Spu]));
        assert!(!is_final_meal(Pra, false, &[Pra]));
    }

    #[test]
    fn in_an_intermittent_plan_the_highest_rank_is_final() {
        // 16:8 with lunch and snack only: the snack closes the eating window.
        assert!(is_final_meal(Spu, true, &[Pra, Spu]));
        assert!(!is_final_meal(Pra, true, &[Pra, Spu]));
        assert!(is_final_meal(Pra, true, &[Col, Pra]));
        assert!(!is_final_meal(Spu, true, &[Spu, Cena]));
    }
}
