//! The push notifications' content: what a device shows for each event, in Italian and English.
//!
//! The texts are a catalogue in code: [`texts`] answers the title and body of a kind in a
//! language. A new text is one arm in each language's match there (the compiler refuses a kind
//! left without one); a new language is a [`Locale`] variant and its own match.
//!
//! The payload is the JSON the service worker decrypts: `{title, body, url, tag, kind}`. `tag`
//! lets the browser replace an older notification of the same kind instead of stacking them.
//! `url` is the page of the web app a tap opens: the running fast for milestones, the plan for
//! meals, the weight for the weigh-in, the settings (where it was sent from) for the test push.

use serde::Serialize;

use crate::fasting::Milestone;
use crate::locale::Locale;

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

/// The page a tap opens: the same in every language.
fn url(kind: Kind) -> &'static str {
    match kind {
        Kind::Test => "/settings",
        Kind::WeeklyWeighIn => "/weight",
        Kind::MealLunch | Kind::MealSnack | Kind::MealDinner => "/plan",
        // The running fast and the day's water are both on the today page.
        Kind::Milestone(_) => "/",
    }
}

/// The title and body of `kind` in `locale`.
pub fn texts(kind: Kind, locale: Locale) -> (&'static str, &'static str) {
    match locale {
        Locale::It => italian(kind),
        Locale::En => english(kind),
    }
}

fn italian(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Test => (
            "Notifiche attive",
            "Questa è una notifica di prova: su questo dispositivo le notifiche funzionano.",
        ),
        Kind::WeeklyWeighIn => (
            "Pesata settimanale",
            "È lunedì: pesati a digiuno e registra il peso per seguire i tuoi progressi.",
        ),
        Kind::MealLunch => (
            "È ora di pranzo",
            "È ora di pranzo: guarda cosa prevede il piano di oggi.",
        ),
        Kind::MealSnack => (
            "È ora dello spuntino",
            "Uno spuntino leggero ti aiuta ad arrivare a cena: guarda il piano di oggi.",
        ),
        Kind::MealDinner => (
            "È ora di cena",
            "È ora di cena: guarda cosa prevede il piano di oggi.",
        ),
        Kind::Milestone(Milestone::Hydration2h) => (
            "Due ore di digiuno",
            "Ottimo inizio! Bevi un bicchiere d'acqua per restare idratato.",
        ),
        Kind::Milestone(Milestone::Hydration4h) => (
            "Quattro ore di digiuno",
            "Continua così. Ricordati di bere: acqua, tè o tisane senza zucchero.",
        ),
        Kind::Milestone(Milestone::Hydration6h) => (
            "Sei ore di digiuno",
            "Sei a buon punto. Un altro bicchiere d'acqua aiuta a tenere a bada la fame.",
        ),
        Kind::Milestone(Milestone::Electrolyte18h) => (
            "Diciotto ore di digiuno",
            "Nei digiuni lunghi servono elettroliti: un pizzico di sale nell'acqua o un brodo vegetale.",
        ),
        Kind::Milestone(Milestone::EndingSoon) => (
            "Il digiuno sta per finire",
            "Mancano 30 minuti alla fine del digiuno: prepara un pasto leggero per rompere il digiuno.",
        ),
    }
}

fn english(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Test => (
            "Notifications are on",
            "This is a test notification: notifications work on this device.",
        ),
        Kind::WeeklyWeighIn => (
            "Weekly weigh-in",
            "It's Monday: weigh yourself before breakfast and log your weight to follow your progress.",
        ),
        Kind::MealLunch => (
            "Time for lunch",
            "It's lunchtime: see what today's plan has for you.",
        ),
        Kind::MealSnack => (
            "Time for a snack",
            "A light snack helps you get to dinner: see today's plan.",
        ),
        Kind::MealDinner => (
            "Time for dinner",
            "It's dinnertime: see what today's plan has for you.",
        ),
        Kind::Milestone(Milestone::Hydration2h) => (
            "Two hours of fasting",
            "Great start! Drink a glass of water to stay hydrated.",
        ),
        Kind::Milestone(Milestone::Hydration4h) => (
            "Four hours of fasting",
            "Keep going. Remember to drink: water, tea or unsweetened herbal tea.",
        ),
        Kind::Milestone(Milestone::Hydration6h) => (
            "Six hours of fasting",
            "You're well on your way. Another glass of water helps keep hunger at bay.",
        ),
        Kind::Milestone(Milestone::Electrolyte18h) => (
            "Eighteen hours of fasting",
            "Long fasts need electrolytes: a pinch of salt in your water or a vegetable broth.",
        ),
        Kind::Milestone(Milestone::EndingSoon) => (
            "Your fast is almost over",
            "30 minutes until the end of your fast: get a light meal ready to break it.",
        ),
    }
}

/// The notification for `kind` in `locale`.
pub fn payload(kind: Kind, locale: Locale) -> Payload {
    let (title, body) = texts(kind, locale);
    Payload {
        title: title.to_owned(),
        body: body.to_owned(),
        url: url(kind).to_owned(),
        tag: kind.key().to_owned(),
        kind: kind.key().to_owned(),
    }
}

/// The notification for `kind` in every language, keyed by the language's code
/// (`{"it": payload, "en": payload}`), for a statement that picks each recipient's own with
/// `payloads -> locale`.
pub fn payloads(kind: Kind) -> serde_json::Value {
    serde_json::Value::Object(
        Locale::ALL
            .into_iter()
            .map(|l| {
                (
                    l.as_str().to_owned(),
                    serde_json::to_value(payload(kind, l)).unwrap_or_default(),
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_text_in_every_language_and_a_stable_key() {
        let mut kinds = vec![
            Kind::Test,
            Kind::WeeklyWeighIn,
            Kind::MealLunch,
            Kind::MealSnack,
            Kind::MealDinner,
        ];
        kinds.extend(Milestone::ALL.map(Kind::Milestone));
        let mut keys = std::collections::HashSet::new();
        for (k, locale) in kinds.into_iter().flat_map(|k| Locale::ALL.map(|l| (k, l))) {
            let p = payload(k, locale);
            assert!(!p.title.is_empty() && !p.body.is_empty());
            assert!(p.url.starts_with('/'));
            assert_eq!(p.kind, k.key());
            assert!(
                keys.insert((p.kind.clone(), locale)),
                "duplicate key {}",
                p.kind
            );
            // Far below any push service's limit once encrypted.
            assert!(
                serde_json::to_vec(&p)
                    .map(|v| v.len())
                    .unwrap_or(usize::MAX)
                    < 1024
            );
        }
        assert!(payload(Kind::MealLunch, Locale::It).body.contains("pranzo"));
        assert!(payload(Kind::MealLunch, Locale::En).body.contains("lunch"));
        assert_eq!(
            payload(Kind::Milestone(Milestone::Electrolyte18h), Locale::En).kind,
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
            for locale in Locale::ALL {
                assert_eq!(payload(k, locale).url, expected, "{k:?}");
            }
        }
    }

    /// No English push repeats the Italian one: a kind forgotten in the English catalogue would.
    #[test]
    fn each_language_has_its_own_texts() {
        for k in Kind::ALL {
            assert_ne!(texts(k, Locale::It), texts(k, Locale::En), "{k:?}");
        }
    }

    #[test]
    fn payloads_hold_every_language_under_its_code() {
        let all = payloads(Kind::WeeklyWeighIn);
        for locale in Locale::ALL {
            assert_eq!(
                all[locale.as_str()],
                serde_json::to_value(payload(Kind::WeeklyWeighIn, locale)).unwrap_or_default()
            );
        }
        assert_eq!(all["en"]["url"], "/weight");
        assert_eq!(all["en"]["title"], "Weekly weigh-in");
    }
}
