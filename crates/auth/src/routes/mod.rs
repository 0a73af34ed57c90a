//! The routes of the auth service, mounted identically by `main` and by tests.

use actix_web::web;

mod ok;

pub fn config(cfg: &mut web::ServiceConfig) {
    cfg.service(web::scope("/api/auth").route("/ok", web::get().to(ok::ok)));
}
