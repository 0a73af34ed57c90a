//! The API document and the router held to each other.

use crate::helpers::spawn_app;

/// The document served at `/openapi.json` lists exactly the routes and methods the service
/// mounts, and `/docs` is the page that renders it.
#[tokio::test]
async fn the_openapi_document_matches_the_mounted_routes() {
    let app = spawn_app().await;
    let doc = testkit::openapi::served_document(
        &app.http,
        &app.base,
        serde_json::to_value(auth::openapi::document()).unwrap(),
    )
    .await;
    let mounted = service_kit::openapi::mounted_routes(|cfg| {
        cfg.configure(service_kit::openapi::mount(
            service_kit::openapi::Docs::new(&auth::openapi::document()),
        ))
        .configure(auth::routes::config);
    })
    .await;
    assert!(
        mounted.contains(&"/api/auth/sign-in/email".to_owned()),
        "{mounted:?}"
    );
    testkit::openapi::assert_document_matches_routes(&app.http, &app.base, &doc, &mounted).await;
    let page = app
        .http
        .get(format!("{}/docs", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
}
