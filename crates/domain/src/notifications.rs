//! The push notifications' content: what a device shows for each event, in Italian.
//!
//! The payload is the JSON the service worker decrypts: `{title, body, url, tag, kind}`. `tag`
//! lets the browser replace an older notification of the same kind instead of stacking them.
//! `url` is the page of the web app a tap opens: the running fast for milestones, the plan for
//! meals, the weight for the weigh-in, the settings (where it was sent from) for the test push.

use serde::Serialize;

use crate::fasting::Milestone;

/// Every event that sends a push.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Test,
    WeeklyWeighIn,
    MealLunch,
    MealSnack,
    MealDinner,
    Milestone(Milestone),
}

impl Kind {
    /// Every kind, so that whatever lists the addresses the product hands out misses none.
    pub const ALL: [Self; 10] = [
        Self::Test,
        Self::WeeklyWeighIn,
        Self::MealLunch,
        Self::MealSnack,
        Self::MealDinner,
        Self::Milestone(Milestone::Hydration2h),
        Self::Milestone(Milestone::Hydration4h),
        Self::Milestone(Milestone::Hydration6h),
        Self::Milestone(Milestone::Electrolyte18h),
        Self::Milestone(Milestone::EndingSoon),
    ];

    /// The `kind` field of the payload.
    pub fn key(self) -> &'static str {
        match self {
            Self::Test => "test",
            Self::WeeklyWeighIn => "weekly_weigh_in",
            Self::MealLunch => "meal_lunch",
            Self::MealSnack => "meal_snack",
            Self::MealDinner => "meal_dinner",
            Self::Milestone(m) => m.key(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Payload {
    pub title: String,
    pub body: String,
    pub url: String,
    pub tag: String,
    pub kind: String,
}

/// The notification for `kind`.
pub fn payload(kind: Kind) -> Payload {
    let (title, body, url) = match kind {
        Kind::Test => (
            "Notifiche attive",
            "Questa è una notifica di prova: su questo dispositivo le notifiche funzionano.",
            "/settings",
        ),
        Kind::WeeklyWeighIn => (
            "Pesata settimanale",
            "È lunedì: pesati a digiuno e registra il peso per seguire i tuoi progressi.",
            "/weight",
        ),
        Kind::MealLunch => (
            "È ora di pranzo",
            "È ora di pranzo: guarda cosa prevede il piano di oggi.",
            "/plan",
        ),
        Kind::MealSnack => (
            "È ora dello spuntino",
            "Uno spuntino leggero ti aiuta ad arrivare a cena: guarda il piano di oggi.",
            "/plan",
        ),
        Kind::MealDinner => (
            "È ora di cena",
            "È ora di cena: guarda cosa prevede il piano di oggi.",
            "/plan",
        ),
        Kind::Milestone(Milestone::Hydration2h) => (
            "Due ore di digiuno",
            "Ottimo inizio! Bevi un bicchiere d'acqua per restare idratato.",
            "/",
        ),
        Kind::Milestone(Milestone::Hydration4h) => (
            "Quattro ore di digiuno",
            "Continua così. Ricordati di bere: acqua, tè o tisane senza zucchero.",
            "/",
        ),
        Kind::Milestone(Milestone::Hydration6h) => (
            "Sei ore di digiuno",
            "Sei a buon punto. Un altro bicchiere d'acqua aiuta a tenere a bada la fame.",
            "/",
        ),
        Kind::Milestone(Milestone::Electrolyte18h) => (
            "Diciotto ore di digiuno",
            "Nei digiuni lunghi servono elettroliti: un pizzico di sale nell'acqua o un brodo vegetale.",
            "/",
        ),
        Kind::Milestone(Milestone::EndingSoon) => (
            "Il digiuno sta per finire",
            "Mancano 30 minuti alla fine del digiuno: prepara un pasto leggero per rompere il digiuno.",
            "/",
        ),
    };
    Payload {
        title: title.to_owned(),
        body: body.to_owned(),
        url: url.to_owned(),
        tag: kind.key().to_owned(),
        kind: kind.key().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_italian_text_and_a_stable_key() {
        let mut kinds = vec![
            Kind::Test,
            Kind::WeeklyWeighIn,
            Kind::MealLunch,
            Kind::MealSnack,
            Kind::MealDinner,
        ];
        kinds.extend(Milestone::ALL.map(Kind::Milestone));
        let mut keys = std::collections::HashSet::new();
        for k in kinds {
            let p = payload(k);
            assert!(!p.title.is_empty() && !p.body.is_empty());
            assert!(p.url.starts_with('/'));
            assert_eq!(p.kind, k.key());
            assert!(keys.insert(p.kind.clone()), "duplicate key {}", p.kind);
            // Far below any push service's limit once encrypted.
            assert!(
                serde_json::to_vec(&p)
                    .map(|v| v.len())
                    .unwrap_or(usize::MAX)
                    < 1024
            );
        }
        assert!(payload(Kind::MealLunch).body.contains("pranzo"));
        assert_eq!(
            payload(Kind::Milestone(Milestone::Electrolyte18h)).kind,
            "electrolyte_18h"
        );
    }

    #[test]
    fn all_lists_every_milestone() {
        for m in Milestone::ALL {
            assert!(Kind::ALL.contains(&Kind::Milestone(m)), "{m:?}");
        }
    }

    /// Each push opens the page that shows what it is about, and only pages the web app has.
    #[test]
    fn every_push_opens_its_page() {
        for k in Kind::ALL {
            let expected = match k {
                Kind::Milestone(_) => "/",
                Kind::MealLunch | Kind::MealSnack | Kind::MealDinner => "/plan",
                Kind::WeeklyWeighIn => "/weight",
                Kind::Test => "/settings",
            };
            assert_eq!(payload(k).url, expected, "{k:?}");
        }
    }
}
