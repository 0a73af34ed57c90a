use actix_web::{HttpResponse, web};
use domain::recipes::Category;
use serde::Deserialize;
use session::CurrentUser;

use crate::error::{ApiError, invalid};
use crate::state::AppState;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecipeQuery {
    /// Only recipes of this category.
    #[param(value_type = Option<domain::recipes::Category>)]
    category: Option<String>,
}

/// `GET /me/recipes?category=`: the catalogue shipped with the product.
pub async fn list(
    _me: CurrentUser,
    state: web::Data<AppState>,
    query: web::Query<RecipeQuery>,
) -> Result<HttpResponse, ApiError> {
    let recipes: Vec<&domain::recipes::Recipe> = match query.category.as_deref() {
        None | Some("") => state.catalogue.all().iter().collect(),
        Some(raw) => {
            let category: Category = raw
                .parse()
                .map_err(|_| invalid("category", "must be COLAZIONE, PRANZO, SPUNTINO or CENA"))?;
            state.catalogue.by_category(category)
        }
    };
    Ok(HttpResponse::Ok().json(serde_json::json!({ "recipes": recipes })))
}

/// `GET /me/recipes/<id>`.
pub async fn one(
    _me: CurrentUser,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .catalogue
        .get(&path)
        .map(|r| HttpResponse::Ok().json(r))
        .ok_or(ApiError::NotFound)
}
