// The web UI's three files (src/server/ui, embedded at build time). They are public: the page
// holds no data until the API, behind its gate, answers. A strict Content-Security-Policy lets
// the page run only its own script and style, and never be framed.
#include "server/api.h"

namespace mk::server {

namespace ui {
extern const char* const k_index_html;
extern const char* const k_app_js;
extern const char* const k_app_css;
}  // namespace ui

namespace {

Handler Static(const char* const& text, const char* content_type) {
  return [&text, content_type](const Call&) {
    Reply reply;
    reply.body = text;
    reply.content_type = content_type;
    reply.headers.push_back({"Content-Security-Policy",
                             "default-src 'self'; script-src 'self'; style-src 'self'; "
                             "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; "
                             "base-uri 'none'"});
    reply.headers.push_back({"X-Frame-Options", "DENY"});
    reply.headers.push_back({"Referrer-Policy", "no-referrer"});
    return reply;
  };
}

}  // namespace

void RegisterUiRoutes(Router& router) {
  router.Add("GET", "/", "ui", std::nullopt, Static(ui::k_index_html, "text/html; charset=utf-8"));
  router.Add("GET", "/ui/app.js", "ui", std::nullopt,
             Static(ui::k_app_js, "text/javascript; charset=utf-8"));
  router.Add("GET", "/ui/app.css", "ui", std::nullopt, Static(ui::k_app_css, "text/css; charset=utf-8"));
}

}  // namespace mk::server
