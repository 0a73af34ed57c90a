//! The recipe catalogue: Italian recipes written for the product, whose energy and macronutrients
//! are computed from a per-100 g ingredient table (USDA FoodData Central, SR Legacy), and the
//! break-fast suggestions offered after a long fast.
//!
//! Both tables are embedded at compile time from `data/ingredients.json` and `data/recipes.json`,
//! so loading touches no file system. Nutrition is never stored with a recipe: a recipe lists
//! ingredients and grams, and every figure is derived from the ingredient table, so correcting an
//! ingredient corrects every recipe that uses it.
//!
//! # Tags
//!
//! Recipes carry tags from a fixed vocabulary ([`Tag`]):
//!
//! | tag | meaning |
//! |---|---|
//! | `cooked` | the dish is heat-treated (exactly one of `cooked` and `raw`) |
//! | `raw` | the dish is assembled without cooking |
//! | `soft` | creamy, mashed, spoonable or otherwise needing little chewing |
//! | `boiled`, `steamed`, `baked`, `grilled`, `fried` | the cooking method (each implies `cooked`) |
//! | `vegetarian` | no meat or fish |
//! | `vegan` | only plant ingredients (no dairy, egg or honey) |
//! | `gluten_free` | no ingredient containing gluten (oats count as containing it) |
//! | `dairy_free` | no milk, yogurt or cheese |
//! | `fermented` | contains a live fermented food such as yogurt |
//! | `high_fibre` | at least 6 g of fibre per portion (derived, never written in the data) |
//! | `high_protein` | at least 20 g of protein per portion (derived, never written in the data) |
//!
//! The diet tags must agree with the ingredients in both directions: a recipe that qualifies as
//! vegetarian, vegan, gluten-free or dairy-free must say so, so that filters never miss a dish.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

const INGREDIENTS_JSON: &str = include_str!("../data/ingredients.json");
const RECIPES_JSON: &str = include_str!("../data/recipes.json");

/// How many recipes a break-fast suggestion returns.
pub const BREAK_FAST_SUGGESTIONS: usize = 3;
/// Longest preparation a break-fast recipe may need.
pub const BREAK_FAST_MAX_PREP_MINUTES: u32 = 20;
/// Most energy a break-fast recipe may provide.
pub const BREAK_FAST_MAX_KCAL: u32 = 350;
/// Protein per portion, in grams, that the easy-to-digest score treats as ideal after a fast.
pub const BREAK_FAST_PROTEIN_BAND_G: (f64, f64) = (10.0, 25.0);

/// Fibre per portion from which a recipe is tagged `high_fibre`.
pub const HIGH_FIBRE_MIN_G: f64 = 6.0;
/// Protein per portion from which a recipe is tagged `high_protein`.
pub const HIGH_PROTEIN_MIN_G: f64 = 20.0;

/// The meal a recipe is written for.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Category {
    Colazione,
    Pranzo,
    Spuntino,
    Cena,
}

impl Category {
    pub const ALL: [Category; 4] = [
        Category::Colazione,
        Category::Pranzo,
        Category::Spuntino,
        Category::Cena,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Colazione => "COLAZIONE",
            Category::Pranzo => "PRANZO",
            Category::Spuntino => "SPUNTINO",
            Category::Cena => "CENA",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown recipe category; expected one of COLAZIONE, PRANZO, SPUNTINO, CENA")]
pub struct UnknownCategory;

impl FromStr for Category {
    type Err = UnknownCategory;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Category::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or(UnknownCategory)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The recipe tag vocabulary; see the module documentation for what each tag promises.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tag {
    Cooked,
    Raw,
    Soft,
    Boiled,
    Steamed,
    Baked,
    Grilled,
    Fried,
    Vegetarian,
    Vegan,
    GlutenFree,
    DairyFree,
    Fermented,
    HighFibre,
    HighProtein,
}

impl Tag {
    pub const ALL: [Tag; 15] = [
        Tag::Cooked,
        Tag::Raw,
        Tag::Soft,
        Tag::Boiled,
        Tag::Steamed,
        Tag::Baked,
        Tag::Grilled,
        Tag::Fried,
        Tag::Vegetarian,
        Tag::Vegan,
        Tag::GlutenFree,
        Tag::DairyFree,
        Tag::Fermented,
        Tag::HighFibre,
        Tag::HighProtein,
    ];

    /// Cooking methods, each of which implies [`Tag::Cooked`].
    pub const METHODS: [Tag; 5] = [
        Tag::Boiled,
        Tag::Steamed,
        Tag::Baked,
        Tag::Grilled,
        Tag::Fried,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Tag::Cooked => "cooked",
            Tag::Raw => "raw",
            Tag::Soft => "soft",
            Tag::Boiled => "boiled",
            Tag::Steamed => "steamed",
            Tag::Baked => "baked",
            Tag::Grilled => "grilled",
            Tag::Fried => "fried",
            Tag::Vegetarian => "vegetarian",
            Tag::Vegan => "vegan",
            Tag::GlutenFree => "gluten_free",
            Tag::DairyFree => "dairy_free",
            Tag::Fermented => "fermented",
            Tag::HighFibre => "high_fibre",
            Tag::HighProtein => "high_protein",
        }
    }

    /// Tags computed from the nutrition; the data may not state them, so they cannot go stale.
    pub fn is_derived(self) -> bool {
        matches!(self, Tag::HighFibre | Tag::HighProtein)
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an ingredient comes from, which decides the diet tags a recipe must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Plant,
    Dairy,
    Egg,
    Honey,
    Meat,
    Fish,
}

/// One row of the ingredient table: values per 100 g of edible portion, as published by
/// FoodData Central for the record `fdc_id`.
///
/// Sugars may exceed carbohydrate (milk does): FoodData Central measures sugars directly but
/// computes carbohydrate by difference, and the published figures are kept as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ingredient {
    pub id: String,
    /// Italian name shown to users.
    pub name: String,
    pub fdc_id: u32,
    pub fdc_description: String,
    pub origin: Origin,
    pub gluten: bool,
    pub kcal: f64,
    pub protein_g: f64,
    pub carbs_g: f64,
    pub fat_g: f64,
    pub fibre_g: f64,
    pub sugars_g: f64,
}

/// An ingredient line of a recipe as written in the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IngredientAmount {
    pub ingredient: String,
    pub grams: f64,
}

/// A recipe as written in `data/recipes.json`: no nutrition, which is computed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecipeSource {
    pub id: String,
    pub name: String,
    pub category: Category,
    pub prep_minutes: u32,
    pub description: String,
    pub tags: Vec<Tag>,
    pub ingredients: Vec<IngredientAmount>,
}

/// An ingredient line of a computed recipe.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecipeIngredient {
    pub id: String,
    pub name: String,
    pub grams: f64,
    pub fdc_id: u32,
}

/// A recipe with its nutrition for one portion, in the shape the API serves. Energy is rounded
/// to the kilocalorie and grams to one decimal.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Recipe {
    pub id: String,
    pub name: String,
    pub category: Category,
    pub kcal: u32,
    pub prep_minutes: u32,
    pub protein_g: f64,
    pub carbs_g: f64,
    pub fat_g: f64,
    pub fibre_g: f64,
    pub sugars_g: f64,
    pub tags: Vec<Tag>,
    pub ingredients: Vec<RecipeIngredient>,
    pub description: String,
}

impl Recipe {
    pub fn has_tag(&self, tag: Tag) -> bool {
        self.tags.contains(&tag)
    }
}

/// Why the catalogue data was rejected. The data is embedded and tested, so this surfaces only
/// when the data files are edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogueError {
    #[error("{file}: {message}")]
    Malformed { file: &'static str, message: String },
    #[error("ingredient {ingredient:?}: {problem}")]
    Ingredient { ingredient: String, problem: String },
    #[error("recipe {recipe:?}: {problem}")]
    Recipe { recipe: String, problem: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IngredientFile {
    source: String,
    ingredients: Vec<Ingredient>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecipeFile {
    recipes: Vec<serde_json::Value>,
}

/// The validated recipe catalogue with computed nutrition, in the order of the data file.
#[derive(Debug, Clone)]
pub struct Catalogue {
    source: String,
    ingredients: Vec<Ingredient>,
    recipes: Vec<Recipe>,
    by_id: HashMap<String, usize>,
}

impl Catalogue {
    /// Parses and validates the embedded data files.
    pub fn load() -> Result<Self, CatalogueError> {
        Self::from_json(INGREDIENTS_JSON, RECIPES_JSON)
    }

    /// The embedded catalogue, loaded once. The data files are validated by this module's tests,
    /// so a failure here means the embedded data was edited without running them.
    pub fn embedded() -> &'static Catalogue {
        static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
        CATALOGUE.get_or_init(|| match Catalogue::load() {
            Ok(catalogue) => catalogue,
            Err(e) => panic!("embedded recipe catalogue is invalid: {e}"),
        })
    }

    /// Parses and validates catalogue data given as JSON text.
    pub fn from_json(ingredients_json: &str, recipes_json: &str) -> Result<Self, CatalogueError> {
        let table: IngredientFile =
            serde_json::from_str(ingredients_json).map_err(|e| CatalogueError::Malformed {
                file: "ingredients.json",
                message: e.to_string(),
            })?;
        if table.source.trim().is_empty() {
            return Err(CatalogueError::Malformed {
                file: "ingredients.json",
                message: "the source of the values must be stated".into(),
            });
        }
        let ingredient_index = index_ingredients(&table.ingredients)?;

        let file: RecipeFile =
            serde_json::from_str(recipes_json).map_err(|e| CatalogueError::Malformed {
                file: "recipes.json",
                message: e.to_string(),
            })?;
        let mut recipes = Vec::with_capacity(file.recipes.len());
        let mut by_id = HashMap::with_capacity(file.recipes.len());
        for (position, value) in file.recipes.into_iter().enumerate() {
            // Parsing each recipe on its own lets every error name the recipe it is about.
            let label = value
                .get("id")
                .and_then(serde_json::Value::as_str)
                .map_or_else(|| format!("#{}", position + 1), str::to_owned);
            let source: RecipeSource =
                serde_json::from_value(value).map_err(|e| CatalogueError::Recipe {
                    recipe: label.clone(),
                    problem: e.to_string(),
                })?;
            let recipe = build_recipe(&source, &table.ingredients, &ingredient_index).map_err(
                |problem| CatalogueError::Recipe {
                    recipe: label.clone(),
                    problem,
                },
            )?;
            if by_id.insert(recipe.id.clone(), recipes.len()).is_some() {
                return Err(CatalogueError::Recipe {
                    recipe: label,
                    problem: "duplicate recipe id".into(),
                });
            }
            recipes.push(recipe);
        }
        Ok(Self {
            source: table.source,
            ingredients: table.ingredients,
            recipes,
            by_id,
        })
    }

    /// Where the ingredient values come from, as stated by the ingredient table.
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn ingredients(&self) -> &[Ingredient] {
        &self.ingredients
    }

    /// Every recipe, in the order of the data file.
    pub fn all(&self) -> &[Recipe] {
        &self.recipes
    }

    pub fn get(&self, id: &str) -> Option<&Recipe> {
        self.by_id.get(id).map(|&i| &self.recipes[i])
    }

    /// The recipes of one category, in the order of the data file.
    pub fn by_category(&self, category: Category) -> Vec<&Recipe> {
        self.recipes
            .iter()
            .filter(|r| r.category == category)
            .collect()
    }

    /// Every recipe that may be suggested to break a fast, best first: see
    /// [`is_break_fast_candidate`] and [`easy_digest_score`].
    pub fn break_fast_candidates(&self) -> Vec<&Recipe> {
        let mut ranked: Vec<(i64, &Recipe)> = self
            .recipes
            .iter()
            .filter(|r| is_break_fast_candidate(r))
            .map(|r| (score_tenths(r), r))
            .collect();
        ranked.sort_by(|(sa, a), (sb, b)| sb.cmp(sa).then_with(|| a.id.cmp(&b.id)));
        ranked.into_iter().map(|(_, r)| r).collect()
    }

    /// The [`BREAK_FAST_SUGGESTIONS`] best recipes to break a fast of 24 hours or more: the
    /// head of [`Catalogue::break_fast_candidates`], ranked by [`easy_digest_score`] (highest
    /// first) with ties broken by recipe id, so the answer is the same on every call.
    pub fn break_fast_suggestions(&self) -> Vec<&Recipe> {
        let mut ranked = self.break_fast_candidates();
        ranked.truncate(BREAK_FAST_SUGGESTIONS);
        ranked
    }
}

/// Whether a recipe may be suggested to break a fast: a breakfast or a snack, ready in at most
/// [`BREAK_FAST_MAX_PREP_MINUTES`], at most [`BREAK_FAST_MAX_KCAL`], and never fried.
pub fn is_break_fast_candidate(recipe: &Recipe) -> bool {
    matches!(recipe.category, Category::Colazione | Category::Spuntino)
        && recipe.prep_minutes <= BREAK_FAST_MAX_PREP_MINUTES
        && recipe.kcal <= BREAK_FAST_MAX_KCAL
        && !recipe.has_tag(Tag::Fried)
}

/// How easy a portion is to digest after a long fast; higher is gentler.
///
/// ```text
/// score = 100
///       − 4 × fatG
///       − 5 × fibreG
///       − 1 × sugarsG
///       − 2 × (grams of protein outside the 10–25 g band)
///       + 10 if cooked + 10 if soft − 10 if raw
/// ```
///
/// Fat and fibre slow gastric emptying and are the usual cause of discomfort when eating
/// resumes, so they weigh most; a large load of sugar after a fast is discouraged more gently;
/// some protein helps, so only protein below 10 g or above 25 g is penalised; cooked and soft
/// food needs less digestive work than raw food. The score uses the rounded values the API
/// publishes, so a client can reproduce it, and is exact to the tenth.
pub fn easy_digest_score(recipe: &Recipe) -> f64 {
    // Tenths are integers, so an i64 count of them converts to f64 exactly.
    score_tenths(recipe) as f64 / 10.0
}

/// The score in tenths, computed in integers so that equal scores compare equal and the
/// tie-break by id decides, with no floating-point rounding in the way.
fn score_tenths(recipe: &Recipe) -> i64 {
    let fat = tenths(recipe.fat_g);
    let fibre = tenths(recipe.fibre_g);
    let sugars = tenths(recipe.sugars_g);
    let protein = tenths(recipe.protein_g);
    let (low, high) = (
        tenths(BREAK_FAST_PROTEIN_BAND_G.0),
        tenths(BREAK_FAST_PROTEIN_BAND_G.1),
    );
    let protein_gap = (low - protein).max(0) + (protein - high).max(0);
    let bonus = |tag: Tag, points: i64| if recipe.has_tag(tag) { points } else { 0 };
    1000 - 4 * fat - 5 * fibre - sugars - 2 * protein_gap
        + bonus(Tag::Cooked, 100)
        + bonus(Tag::Soft, 100)
        - bonus(Tag::Raw, 100)
}

fn tenths(grams: f64) -> i64 {
    (grams * 10.0).round() as i64
}

fn round1(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

fn is_snake_case_id(id: &str) -> bool {
    !id.is_empty() && id.split('_').all(is_lower_alnum)
}

fn is_slug(id: &str) -> bool {
    !id.is_empty() && id.split('-').all(is_lower_alnum)
}

fn is_lower_alnum(part: &str) -> bool {
    !part.is_empty()
        && part
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn index_ingredients(ingredients: &[Ingredient]) -> Result<HashMap<&str, usize>, CatalogueError> {
    let mut index = HashMap::with_capacity(ingredients.len());
    let mut fdc_ids = HashSet::with_capacity(ingredients.len());
    for (i, ingredient) in ingredients.iter().enumerate() {
        let fail = |problem: String| CatalogueError::Ingredient {
            ingredient: ingredient.id.clone(),
            problem,
        };
        if !is_snake_case_id(&ingredient.id) {
            return Err(fail("id must be snake_case (a-z, 0-9, _)".into()));
        }
        if ingredient.name.trim().is_empty() || ingredient.fdc_description.trim().is_empty() {
            return Err(fail("name and fdcDescription must not be empty".into()));
        }
        if ingredient.fdc_id == 0 {
            return Err(fail("fdcId must be a FoodData Central id".into()));
        }
        let values = [
            ("kcal", ingredient.kcal),
            ("proteinG", ingredient.protein_g),
            ("carbsG", ingredient.carbs_g),
            ("fatG", ingredient.fat_g),
            ("fibreG", ingredient.fibre_g),
            ("sugarsG", ingredient.sugars_g),
        ];
        if let Some((field, value)) = values.iter().find(|(_, v)| !v.is_finite() || *v < 0.0) {
            return Err(fail(format!(
                "{field} must be a non-negative number, not {value}"
            )));
        }
        if ingredient.protein_g + ingredient.carbs_g + ingredient.fat_g > 100.0 {
            return Err(fail(
                "protein, carbohydrate and fat exceed 100 g per 100 g".into(),
            ));
        }
        if ingredient.fibre_g > ingredient.carbs_g {
            return Err(fail("fibre exceeds carbohydrate, which includes it".into()));
        }
        if ingredient.kcal > 900.0 {
            return Err(fail("more energy than pure fat".into()));
        }
        if index.insert(ingredient.id.as_str(), i).is_some() {
            return Err(fail("duplicate ingredient id".into()));
        }
        if !fdc_ids.insert(ingredient.fdc_id) {
            return Err(fail(format!(
                "fdcId {} is already used by another ingredient",
                ingredient.fdc_id
            )));
        }
    }
    Ok(index)
}

fn build_recipe(
    source: &RecipeSource,
    table: &[Ingredient],
    index: &HashMap<&str, usize>,
) -> Result<Recipe, String> {
    if !is_slug(&source.id) {
        return Err("id must be a slug (a-z, 0-9, -)".into());
    }
    if source.name.trim().is_empty() || source.description.trim().is_empty() {
        return Err("name and description must not be empty".into());
    }
    if source.prep_minutes == 0 {
        return Err("prepMinutes must be positive".into());
    }
    if source.ingredients.is_empty() {
        return Err("a recipe needs at least one ingredient".into());
    }

    let mut lines = Vec::with_capacity(source.ingredients.len());
    let mut seen = HashSet::with_capacity(source.ingredients.len());
    let mut total = [0.0_f64; 6];
    for amount in &source.ingredients {
        let Some(&i) = index.get(amount.ingredient.as_str()) else {
            return Err(format!("unknown ingredient {:?}", amount.ingredient));
        };
        if !amount.grams.is_finite() || amount.grams <= 0.0 {
            return Err(format!(
                "grams of {:?} must be positive, not {}",
                amount.ingredient, amount.grams
            ));
        }
        if !seen.insert(i) {
            return Err(format!("ingredient {:?} listed twice", amount.ingredient));
        }
        let ingredient = &table[i];
        let per_100g = [
            ingredient.kcal,
            ingredient.protein_g,
            ingredient.carbs_g,
            ingredient.fat_g,
            ingredient.fibre_g,
            ingredient.sugars_g,
        ];
        for (sum, value) in total.iter_mut().zip(per_100g) {
            *sum += value * amount.grams / 100.0;
        }
        lines.push(RecipeIngredient {
            id: ingredient.id.clone(),
            name: ingredient.name.clone(),
            grams: amount.grams,
            fdc_id: ingredient.fdc_id,
        });
    }
    let [kcal, protein_g, carbs_g, fat_g, fibre_g, sugars_g] = total;

    let tags = check_tags(source, table, index)?;
    let mut recipe = Recipe {
        id: source.id.clone(),
        name: source.name.clone(),
        category: source.category,
        // Every term is non-negative; `as` saturates, so only an absurd total could be clipped.
        kcal: kcal.round() as u32,
        prep_minutes: source.prep_minutes,
        protein_g: round1(protein_g),
        carbs_g: round1(carbs_g),
        fat_g: round1(fat_g),
        fibre_g: round1(fibre_g),
        sugars_g: round1(sugars_g),
        tags,
        ingredients: lines,
        description: source.description.clone(),
    };
    if recipe.fibre_g >= HIGH_FIBRE_MIN_G {
        recipe.tags.push(Tag::HighFibre);
    }
    if recipe.protein_g >= HIGH_PROTEIN_MIN_G {
        recipe.tags.push(Tag::HighProtein);
    }
    Ok(recipe)
}

/// Checks the written tags against each other and against the ingredients.
fn check_tags(
    source: &RecipeSource,
    table: &[Ingredient],
    index: &HashMap<&str, usize>,
) -> Result<Vec<Tag>, String> {
    let tags = &source.tags;
    let mut seen = HashSet::with_capacity(tags.len());
    for &tag in tags {
        if tag.is_derived() {
            return Err(format!(
                "tag {tag} is computed from the nutrition, not written"
            ));
        }
        if !seen.insert(tag) {
            return Err(format!("tag {tag} listed twice"));
        }
    }
    let has = |tag: Tag| seen.contains(&tag);
    if has(Tag::Cooked) == has(Tag::Raw) {
        return Err("exactly one of the tags cooked and raw is required".into());
    }
    if let Some(method) = Tag::METHODS.iter().find(|&&m| has(m) && !has(Tag::Cooked)) {
        return Err(format!("tag {method} requires the tag cooked"));
    }

    let ingredients: Vec<&Ingredient> = source
        .ingredients
        .iter()
        .filter_map(|a| index.get(a.ingredient.as_str()).map(|&i| &table[i]))
        .collect();
    let any = |f: &dyn Fn(&Ingredient) -> bool| ingredients.iter().any(|i| f(i));
    let expected = [
        (
            Tag::Vegetarian,
            !any(&|i| matches!(i.origin, Origin::Meat | Origin::Fish)),
        ),
        (Tag::Vegan, !any(&|i| i.origin != Origin::Plant)),
        (Tag::GlutenFree, !any(&|i| i.gluten)),
        (Tag::DairyFree, !any(&|i| i.origin == Origin::Dairy)),
    ];
    for (tag, qualifies) in expected {
        match (has(tag), qualifies) {
            (true, false) => return Err(format!("tag {tag} contradicts the ingredients")),
            (false, true) => return Err(format!("tag {tag} is missing: the ingredients qualify")),
            _ => {}
        }
    }
    Ok(tags.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn catalogue() -> &'static Catalogue {
        Catalogue::embedded()
    }

    #[test]
    fn the_embedded_catalogue_loads() {
        let loaded = Catalogue::load().expect("embedded data is valid");
        assert_eq!(loaded.all(), catalogue().all());
        assert!(catalogue().source().contains("FoodData Central"));
        assert!(catalogue().source().contains("SR Legacy"));
    }

    #[test]
    fn at_least_sixty_recipes_and_ten_per_category() {
        let recipes = catalogue().all();
        assert!(recipes.len() >= 60, "{} recipes", recipes.len());
        for category in Category::ALL {
            let n = catalogue().by_category(category).len();
            assert!(n >= 10, "{category}: {n} recipes");
        }
    }

    #[test]
    fn every_ingredient_of_the_table_is_used() {
        let used: HashSet<&str> = catalogue()
            .all()
            .iter()
            .flat_map(|r| r.ingredients.iter().map(|i| i.id.as_str()))
            .collect();
        for ingredient in catalogue().ingredients() {
            assert!(used.contains(ingredient.id.as_str()), "{}", ingredient.id);
        }
    }

    /// FoodData Central energy is computed with food-specific Atwater factors (for example
    /// 2.44 kcal/g protein and 3.57 kcal/g carbohydrate for many vegetables, 3.6 kcal/g
    /// carbohydrate for fruit, 8.37 kcal/g fat for nuts), while the general 4/4/9 factors also
    /// count fibre, which is part of carbohydrate by difference, at 4 kcal/g. General factors
    /// therefore overestimate fruit-, vegetable- and nut-heavy dishes by up to about a tenth, and
    /// specific factors for eggs and meat sit a few percent above them. 12% of the 4/4/9 figure
    /// covers these published differences and still catches a wrong gram, a wrong ingredient or a
    /// value typed per portion instead of per 100 g, all of which are off by far more.
    #[test]
    fn computed_energy_agrees_with_the_macronutrients() {
        for r in catalogue().all() {
            let general = 4.0 * r.protein_g + 4.0 * r.carbs_g + 9.0 * r.fat_g;
            let kcal = f64::from(r.kcal);
            assert!(kcal > 0.0, "{}", r.id);
            assert!(
                (kcal - general).abs() <= 0.12 * general,
                "{}: {kcal} kcal against {general:.0} from 4/4/9",
                r.id
            );
        }
    }

    #[test]
    fn values_are_rounded_as_published() {
        for r in catalogue().all() {
            for v in [r.protein_g, r.carbs_g, r.fat_g, r.fibre_g, r.sugars_g] {
                assert!(
                    ((v * 10.0).round() - v * 10.0).abs() < 1e-6,
                    "{}: {v}",
                    r.id
                );
            }
        }
    }

    #[test]
    fn derived_tags_follow_the_nutrition() {
        for r in catalogue().all() {
            assert_eq!(
                r.has_tag(Tag::HighFibre),
                r.fibre_g >= HIGH_FIBRE_MIN_G,
                "{}",
                r.id
            );
            assert_eq!(
                r.has_tag(Tag::HighProtein),
                r.protein_g >= HIGH_PROTEIN_MIN_G,
                "{}",
                r.id
            );
        }
    }

    #[test]
    fn lookups_by_id_and_category() {
        let c = catalogue();
        for r in c.all() {
            assert_eq!(c.get(&r.id).map(|x| &x.id), Some(&r.id));
        }
        assert!(c.get("nope").is_none());
        let total: usize = Category::ALL.iter().map(|&k| c.by_category(k).len()).sum();
        assert_eq!(total, c.all().len());
        assert!(
            c.by_category(Category::Cena)
                .iter()
                .all(|r| r.category == Category::Cena)
        );
    }

    #[test]
    fn category_strings_round_trip() {
        for category in Category::ALL {
            assert_eq!(category.as_str().parse::<Category>(), Ok(category));
            assert_eq!(
                serde_json::to_value(category).ok(),
                Some(serde_json::json!(category.as_str()))
            );
        }
        assert_eq!("colazione".parse::<Category>(), Err(UnknownCategory));
        assert_eq!("COL".parse::<Category>(), Err(UnknownCategory));
    }

    #[test]
    fn a_recipe_serialises_in_the_contract_shape() {
        let r = catalogue().get("porridge-avena-banana").expect("present");
        let json = serde_json::to_value(r).expect("serialises");
        let mut keys: Vec<&str> = json
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "carbsG",
                "category",
                "description",
                "fatG",
                "fibreG",
                "id",
                "ingredients",
                "kcal",
                "name",
                "prepMinutes",
                "proteinG",
                "sugarsG",
                "tags"
            ]
        );
        assert_eq!(json["category"], "COLAZIONE");
        assert!(json["kcal"].is_u64());
        assert_eq!(json["ingredients"][0]["id"], "fiocchi_avena");
        assert_eq!(json["ingredients"][0]["fdcId"], 173904);
        assert_eq!(json["ingredients"][0]["grams"], 40.0);
        assert!(json["ingredients"][0]["name"].is_string());
        assert!(
            json["tags"]
                .as_array()
                .expect("array")
                .contains(&"soft".into())
        );
    }

    #[test]
    fn break_fast_suggestions_are_three_qualifying_recipes_best_first() {
        let suggestions = catalogue().break_fast_suggestions();
        assert_eq!(suggestions.len(), BREAK_FAST_SUGGESTIONS);
        for r in &suggestions {
            assert!(r.prep_minutes <= 20, "{}", r.id);
            assert!(r.kcal <= 350, "{}", r.id);
            assert!(
                matches!(r.category, Category::Colazione | Category::Spuntino),
                "{}",
                r.id
            );
            assert!(!r.has_tag(Tag::Fried), "{}", r.id);
        }
        for pair in suggestions.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let (sa, sb) = (easy_digest_score(a), easy_digest_score(b));
            assert!(
                sa > sb || (sa == sb && a.id < b.id),
                "{} before {}",
                a.id,
                b.id
            );
        }
        assert_eq!(suggestions, catalogue().break_fast_suggestions());
    }

    #[test]
    fn no_excluded_candidate_scores_above_a_suggestion() {
        let candidates = catalogue().break_fast_candidates();
        let lowest = candidates[BREAK_FAST_SUGGESTIONS - 1];
        for r in &candidates[BREAK_FAST_SUGGESTIONS..] {
            assert!(
                easy_digest_score(r) <= easy_digest_score(lowest),
                "{}",
                r.id
            );
        }
    }

    /// Three suggestions exist whatever the data's order: the catalogue is embedded, so this
    /// count is the guarantee, with a wide margin so that editing a few recipes cannot break it.
    #[test]
    fn far_more_than_three_recipes_qualify_for_break_fast() {
        let candidates = catalogue().break_fast_candidates();
        assert!(
            candidates.len() >= 12,
            "only {} candidates",
            candidates.len()
        );
        let qualifying = catalogue()
            .all()
            .iter()
            .filter(|r| is_break_fast_candidate(r))
            .count();
        assert_eq!(candidates.len(), qualifying);
    }

    #[test]
    fn fried_dishes_are_never_break_fast_candidates() {
        let fried_snack = catalogue()
            .all()
            .iter()
            .find(|r| {
                r.has_tag(Tag::Fried)
                    && r.category == Category::Spuntino
                    && r.kcal <= BREAK_FAST_MAX_KCAL
                    && r.prep_minutes <= BREAK_FAST_MAX_PREP_MINUTES
            })
            .expect("the data holds a fried snack that passes every other rule");
        assert!(!is_break_fast_candidate(fried_snack));
    }

    fn synthetic(fat: f64, fibre: f64, protein: f64, sugars: f64, tags: Vec<Tag>) -> Recipe {
        Recipe {
            id: "synthetic".into(),
            name: "Sintetica".into(),
            category: Category::Spuntino,
            kcal: 200,
            prep_minutes: 10,
            protein_g: round1(protein),
            carbs_g: 20.0,
            fat_g: round1(fat),
            fibre_g: round1(fibre),
            sugars_g: round1(sugars),
            tags,
            ingredients: Vec::new(),
            description: "Ricetta di prova.".into(),
        }
    }

    fn texture() -> impl Strategy<Value = Vec<Tag>> {
        (any::<bool>(), any::<bool>()).prop_map(|(cooked, soft)| {
            let mut tags = vec![if cooked { Tag::Cooked } else { Tag::Raw }];
            if soft {
                tags.push(Tag::Soft);
            }
            tags
        })
    }

    proptest! {
        #[test]
        fn less_fat_or_fibre_never_lowers_the_score(
            fat in 0.0..40.0_f64, fibre in 0.0..20.0_f64, protein in 0.0..50.0_f64,
            sugars in 0.0..60.0_f64, cut in 0.0..1.0_f64, tags in texture(),
        ) {
            let base = easy_digest_score(&synthetic(fat, fibre, protein, sugars, tags.clone()));
            let leaner = synthetic(fat * cut, fibre, protein, sugars, tags.clone());
            let smoother = synthetic(fat, fibre * cut, protein, sugars, tags.clone());
            let less_sweet = synthetic(fat, fibre, protein, sugars * cut, tags);
            prop_assert!(easy_digest_score(&leaner) >= base);
            prop_assert!(easy_digest_score(&smoother) >= base);
            prop_assert!(easy_digest_score(&less_sweet) >= base);
        }

        #[test]
        fn protein_closer_to_the_band_never_lowers_the_score(
            protein in 0.0..60.0_f64, toward in 0.0..1.0_f64, tags in texture(),
        ) {
            let (low, high) = BREAK_FAST_PROTEIN_BAND_G;
            let target = protein.clamp(low, high);
            let closer = protein + (target - protein) * toward;
            let before = easy_digest_score(&synthetic(5.0, 2.0, protein, 10.0, tags.clone()));
            let after = easy_digest_score(&synthetic(5.0, 2.0, closer, 10.0, tags));
            prop_assert!(after >= before);
        }

        #[test]
        fn cooked_and_soft_never_score_below_raw_or_firm(
            fat in 0.0..40.0_f64, fibre in 0.0..20.0_f64, protein in 0.0..50.0_f64,
            sugars in 0.0..60.0_f64, soft in any::<bool>(),
        ) {
            let with = |mut tags: Vec<Tag>| {
                if soft { tags.push(Tag::Soft); }
                easy_digest_score(&synthetic(fat, fibre, protein, sugars, tags))
            };
            prop_assert!(with(vec![Tag::Cooked]) > with(vec![Tag::Raw]));
            let firm = easy_digest_score(&synthetic(fat, fibre, protein, sugars, vec![Tag::Cooked]));
            let softened = easy_digest_score(
                &synthetic(fat, fibre, protein, sugars, vec![Tag::Cooked, Tag::Soft]),
            );
            prop_assert!(softened > firm);
        }

        #[test]
        fn a_lean_soft_cooked_dish_beats_a_fatty_raw_fibrous_one(
            lean_fat in 0.0..3.0_f64, lean_fibre in 0.0..2.0_f64,
            rich_fat in 15.0..40.0_f64, rich_fibre in 8.0..20.0_f64,
            protein in 0.0..50.0_f64, sugars in 0.0..60.0_f64,
        ) {
            let gentle = synthetic(lean_fat, lean_fibre, protein, sugars, vec![Tag::Cooked, Tag::Soft]);
            let heavy = synthetic(rich_fat, rich_fibre, protein, sugars, vec![Tag::Raw]);
            prop_assert!(easy_digest_score(&gentle) > easy_digest_score(&heavy));
        }
    }

    const ONE_INGREDIENT: &str = r#"{"source": "FoodData Central, SR Legacy", "ingredients": [
        {"id": "riso_bianco", "name": "Riso", "fdcId": 168877, "fdcDescription": "Rice",
         "origin": "plant", "gluten": false, "kcal": 365, "proteinG": 7.13, "carbsG": 79.95,
         "fatG": 0.66, "fibreG": 1.3, "sugarsG": 0.12},
        {"id": "latte", "name": "Latte", "fdcId": 170872, "fdcDescription": "Milk",
         "origin": "dairy", "gluten": false, "kcal": 42, "proteinG": 3.37, "carbsG": 4.99,
         "fatG": 0.97, "fibreG": 0, "sugarsG": 5.2}]}"#;

    fn recipe_json(id: &str, category: &str, tags: &str, ingredients: &str) -> String {
        format!(
            r#"{{"id": "{id}", "name": "Nome", "category": "{category}", "prepMinutes": 10,
                "description": "Descrizione.", "tags": {tags}, "ingredients": {ingredients}}}"#
        )
    }

    const GOOD_TAGS: &str = r#"["cooked", "soft", "vegetarian", "gluten_free"]"#;
    const GOOD_LINES: &str =
        r#"[{"ingredient": "riso_bianco", "grams": 40}, {"ingredient": "latte", "grams": 200}]"#;

    fn load_recipes(recipes: &[String]) -> Result<Catalogue, CatalogueError> {
        Catalogue::from_json(
            ONE_INGREDIENT,
            &format!(r#"{{"recipes": [{}]}}"#, recipes.join(",")),
        )
    }

    fn rejected_recipe(recipes: &[String]) -> (String, String) {
        match load_recipes(recipes) {
            Err(CatalogueError::Recipe { recipe, problem }) => (recipe, problem),
            other => panic!("expected a recipe error, got {other:?}"),
        }
    }

    #[test]
    fn a_minimal_catalogue_computes_its_nutrition() {
        let c = load_recipes(&[recipe_json(
            "riso-latte",
            "COLAZIONE",
            GOOD_TAGS,
            GOOD_LINES,
        )])
        .expect("valid");
        let r = c.get("riso-latte").expect("present");
        // 40 g rice: 146 kcal, 200 g milk: 84 kcal.
        assert_eq!(r.kcal, 230);
        assert_eq!(r.protein_g, 9.6);
        assert_eq!(r.sugars_g, 10.4);
    }

    #[test]
    fn unknown_ingredient_is_rejected_naming_the_recipe() {
        let lines = r#"[{"ingredient": "zafferano", "grams": 1}]"#;
        let (recipe, problem) =
            rejected_recipe(&[recipe_json("risotto", "PRANZO", GOOD_TAGS, lines)]);
        assert_eq!(recipe, "risotto");
        assert!(problem.contains("zafferano"), "{problem}");
    }

    #[test]
    fn duplicate_recipe_id_is_rejected() {
        let one = recipe_json("doppio", "CENA", GOOD_TAGS, GOOD_LINES);
        let (recipe, problem) = rejected_recipe(&[one.clone(), one]);
        assert_eq!(recipe, "doppio");
        assert!(problem.contains("duplicate"), "{problem}");
    }

    #[test]
    fn non_positive_grams_are_rejected() {
        for grams in ["0", "-5", "0.0"] {
            let lines = format!(r#"[{{"ingredient": "riso_bianco", "grams": {grams}}}]"#);
            let tags = r#"["cooked", "vegan", "vegetarian", "gluten_free", "dairy_free"]"#;
            let (recipe, problem) = rejected_recipe(&[recipe_json("zero", "CENA", tags, &lines)]);
            assert_eq!(recipe, "zero");
            assert!(problem.contains("positive"), "{grams}: {problem}");
        }
    }

    #[test]
    fn unknown_tag_or_category_is_rejected_naming_the_recipe() {
        let tags = r#"["cooked", "soft", "vegetarian", "gluten_free", "spicy"]"#;
        let (recipe, problem) =
            rejected_recipe(&[recipe_json("piccante", "CENA", tags, GOOD_LINES)]);
        assert_eq!(recipe, "piccante");
        assert!(problem.contains("spicy"), "{problem}");

        let (recipe, problem) =
            rejected_recipe(&[recipe_json("merenda", "MERENDA", GOOD_TAGS, GOOD_LINES)]);
        assert_eq!(recipe, "merenda");
        assert!(problem.contains("MERENDA"), "{problem}");
    }

    #[test]
    fn inconsistent_tags_are_rejected() {
        let cases = [
            (
                r#"["cooked", "raw", "vegetarian", "gluten_free"]"#,
                "cooked and raw",
            ),
            (r#"["soft", "vegetarian", "gluten_free"]"#, "cooked and raw"),
            (r#"["raw", "baked", "vegetarian", "gluten_free"]"#, "baked"),
            (r#"["cooked", "vegetarian"]"#, "gluten_free"),
            (
                r#"["cooked", "vegan", "vegetarian", "gluten_free"]"#,
                "vegan",
            ),
            (
                r#"["cooked", "vegetarian", "gluten_free", "dairy_free"]"#,
                "dairy_free",
            ),
            (r#"["cooked", "gluten_free"]"#, "vegetarian"),
            (
                r#"["cooked", "vegetarian", "gluten_free", "high_fibre"]"#,
                "high_fibre",
            ),
            (
                r#"["cooked", "cooked", "vegetarian", "gluten_free"]"#,
                "twice",
            ),
        ];
        for (tags, expected) in cases {
            let (recipe, problem) =
                rejected_recipe(&[recipe_json("etichette", "CENA", tags, GOOD_LINES)]);
            assert_eq!(recipe, "etichette");
            assert!(problem.contains(expected), "{tags}: {problem}");
        }
    }

    #[test]
    fn malformed_recipes_are_rejected_naming_the_recipe() {
        let no_ingredients = recipe_json("vuota", "CENA", GOOD_TAGS, "[]");
        assert_eq!(rejected_recipe(&[no_ingredients]).0, "vuota");

        let zero_minutes = recipe_json("istantanea", "CENA", GOOD_TAGS, GOOD_LINES)
            .replace(r#""prepMinutes": 10"#, r#""prepMinutes": 0"#);
        let (recipe, problem) = rejected_recipe(&[zero_minutes]);
        assert_eq!(recipe, "istantanea");
        assert!(problem.contains("prepMinutes"), "{problem}");

        let negative_minutes = recipe_json("negativa", "CENA", GOOD_TAGS, GOOD_LINES)
            .replace(r#""prepMinutes": 10"#, r#""prepMinutes": -3"#);
        assert_eq!(rejected_recipe(&[negative_minutes]).0, "negativa");

        let stored_kcal = recipe_json("con-kcal", "CENA", GOOD_TAGS, GOOD_LINES)
            .replace(r#""prepMinutes": 10"#, r#""prepMinutes": 10, "kcal": 230"#);
        let (recipe, problem) = rejected_recipe(&[stored_kcal]);
        assert_eq!(recipe, "con-kcal");
        assert!(problem.contains("kcal"), "{problem}");

        let (recipe, _) =
            rejected_recipe(&[recipe_json("Non Slug", "CENA", GOOD_TAGS, GOOD_LINES)]);
        assert_eq!(recipe, "Non Slug");

        let lines =
            r#"[{"ingredient": "latte", "grams": 100}, {"ingredient": "latte", "grams": 100}]"#;
        let tags = r#"["cooked", "vegetarian", "gluten_free"]"#;
        let (_, problem) = rejected_recipe(&[recipe_json("due-latti", "CENA", tags, lines)]);
        assert!(problem.contains("twice"), "{problem}");
    }

    #[test]
    fn a_recipe_without_an_id_is_named_by_its_position() {
        let nameless =
            recipe_json("x", "CENA", GOOD_TAGS, GOOD_LINES).replace(r#""id": "x", "#, "");
        let good = recipe_json("buona", "CENA", GOOD_TAGS, GOOD_LINES);
        assert_eq!(rejected_recipe(&[good, nameless]).0, "#2");
    }

    #[test]
    fn a_bad_ingredient_table_is_rejected() {
        let recipes = r#"{"recipes": []}"#;
        let bad = [
            (ONE_INGREDIENT.replace("0.66", "-0.66"), "fatG"),
            (
                ONE_INGREDIENT.replace(r#""fibreG": 1.3"#, r#""fibreG": 90"#),
                "fibre",
            ),
            (ONE_INGREDIENT.replace("170872", "168877"), "fdcId"),
            (
                ONE_INGREDIENT.replace(r#""id": "latte""#, r#""id": "riso_bianco""#),
                "duplicate",
            ),
            (
                ONE_INGREDIENT.replace(r#""id": "latte""#, r#""id": "Latte""#),
                "snake_case",
            ),
        ];
        for (table, expected) in bad {
            match Catalogue::from_json(&table, recipes) {
                Err(e @ CatalogueError::Ingredient { .. }) => {
                    assert!(e.to_string().contains(expected), "{e}");
                }
                other => panic!("expected an ingredient error for {expected}, got {other:?}"),
            }
        }
        let unsourced = ONE_INGREDIENT.replace("FoodData Central, SR Legacy", " ");
        assert!(matches!(
            Catalogue::from_json(&unsourced, recipes),
            Err(CatalogueError::Malformed { .. })
        ));
        assert!(matches!(
            Catalogue::from_json("{", recipes),
            Err(CatalogueError::Malformed {
                file: "ingredients.json",
                ..
            })
        ));
    }
}
