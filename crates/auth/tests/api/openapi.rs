//! The API document and the router held to each other.

use crate::helpers::spawn_app;

/// The document served at `/openapi.json` lists exactly the routes and methods the service
/// mounts, and `/docs` is the page that renders it.
#[tokio::test]
async fn the_openapi_document_matches_the_mounted_routes() {
    let app = spawn_app().await;
    let document = auth::openapi::document();
    let mounted =
        testkit::openapi::assert_documents_its_routes(&app.http, &app.base, document, |cfg| {
            cfg.configure(auth::routes::config);
        })
        .await;
    assert!(mounted.contains(&"/api/auth/sign-in/email".to_owned()));
}
