/*
 * page.c - the shell every HTML page of meterd shares: the document's
 * head with the one stylesheet, a skip link, the navigation the
 * signed-in key's role may use, who is signed in and the sign-out form,
 * then the page's own <main>.
 *
 * Pages are plain HTML with no script (the Content-Security-Policy of
 * meter_http_reply_html allows none): links and forms work with the
 * keyboard and a screen reader as the browser made them. Every value
 * from a request or the database goes through meter_buf_html.
 */
#include "meterd_int.h"

#include <inttypes.h>
#include <string.h>

/* The sections of the navigation: finance and admin see every one, an
 * account key its own account and its invoices. */
static const struct {
    const char *section, *label, *href;
} sections[] = {
    {"overview", "Overview", "/overview"},
    {"accounts", "Accounts", "/accounts"},
    {"usage", "Usage", "/usage"},
    {"invoices", "Invoices", "/invoices"},
};

/* One link of the navigation; the active one marked for assistive
 * technology (aria-current) and the stylesheet. */
static void
nav_link(struct meter_buf *out, const char *href, const char *label,
         bool active)
{
    meter_buf_str(out, "<li><a href=\"");
    meter_buf_html(out, href);
    meter_buf_str(out, active ? "\" aria-current=\"page\">" : "\">");
    meter_buf_html(out, label);
    meter_buf_str(out, "</a></li>\n");
}

static void
nav(struct meter_buf *out, const struct meter_principal *who,
    const char *active)
{
    meter_buf_str(out, "<nav aria-label=\"Main\"><ul>\n");
    if (who->role == METER_ROLE_ACCOUNT) {
        struct meter_buf own = {0};
        meterd_home(who, &own);
        nav_link(out, own.failed ? "/" : own.p, "My account",
                 active && strcmp(active, "accounts") == 0);
        meter_buf_release(&own);
        nav_link(out, "/invoices", "Invoices",
                 active && strcmp(active, "invoices") == 0);
    } else {
        for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
            nav_link(out, sections[i].href, sections[i].label,
                     active && strcmp(active, sections[i].section) == 0);
    }
    meter_buf_str(out, "</ul></nav>\n");
}

/* Who is signed in, and the form that signs out: a POST with the
 * session's CSRF token (none for a bearer key, which needs none). */
static void
who_and_sign_out(struct meter_buf *out, struct meter_http_request *rq,
                 const struct meter_principal *who)
{
    meter_buf_str(out, "<div class=\"who\"><span>");
    if (who->role == METER_ROLE_ACCOUNT) {
        meter_buf_str(out, "Account <strong>");
        meter_buf_html(out, who->account_id);
        meter_buf_str(out, "</strong>");
    } else {
        meter_buf_str(out, "Role <strong>");
        meter_buf_html(out, meter_role_name(who->role));
        meter_buf_str(out, "</strong>");
    }
    meter_buf_printf(out, " <span class=\"muted\">(key %" PRId64 ")</span>",
                     who->key_id);
    meter_buf_str(out, "</span>\n<form class=\"sign-out\" method=\"post\" "
                       "action=\"/sign-out\">");
    const char *csrf = meter_http_csrf(rq);
    if (csrf) {
        meter_buf_str(out, "<input type=\"hidden\" name=\"csrf\" value=\"");
        meter_buf_html(out, csrf);
        meter_buf_str(out, "\">");
    }
    meter_buf_str(out, "<button type=\"submit\">Sign out</button></form>"
                       "</div>\n");
}

void
meterd_page_begin(struct meter_buf *out, struct meter_http_request *rq,
                  const char *title, const char *active)
{
    const struct meter_principal *who = meter_http_principal(rq);
    meter_buf_str(out, "<!doctype html>\n<html lang=\"en\">\n<head>\n"
                       "<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
                       "content=\"width=device-width, initial-scale=1\">\n"
                       "<title>");
    meter_buf_html(out, title);
    meter_buf_str(out, " &middot; meter</title>\n<link rel=\"stylesheet\" "
                       "href=\"/static/dash.css\">\n</head>\n<body>\n"
                       "<a class=\"skip\" href=\"#main\">Skip to content</a>\n"
                       "<header class=\"site\">\n<a class=\"brand\" "
                       "href=\"/\">meter</a>\n");
    if (who) {
        nav(out, who, active);
        who_and_sign_out(out, rq, who);
    }
    meter_buf_str(out, "</header>\n<main id=\"main\" tabindex=\"-1\">\n");
}

void
meterd_page_end(struct meter_buf *out)
{
    meter_buf_str(out, "</main>\n</body>\n</html>\n");
}

void
meterd_page_reply(struct meter_http_request *rq, unsigned status,
                  struct meter_buf *out)
{
    if (out->failed)
        meter_http_reply_problem(rq, 503, "saturated", "Out of memory", NULL,
                                 "the page cannot be rendered now");
    else
        meter_http_reply_html(rq, status, out->p ? out->p : "", out->len);
    meter_buf_release(out);
}

void
meterd_home(const struct meter_principal *who, struct meter_buf *out)
{
    if (who->role == METER_ROLE_ACCOUNT) {
        meter_buf_str(out, "/accounts/");
        meter_buf_urlencode(out, who->account_id);
    } else {
        meter_buf_str(out, "/overview");
    }
}
