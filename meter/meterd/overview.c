/*
 * overview.c - GET /overview: a placeholder until the dashboard lands
 * (the finance dashboards are being written beside the sign-in; this
 * page only gives the sign-in somewhere to go and its tests a page
 * route of finance and admin). Replace it whole.
 */
#include "meterd_int.h"

void
meterd_overview(struct meter_http_request *rq)
{
    struct meter_buf out = {0};
    meterd_page_begin(&out, rq, "Overview", "overview");
    meter_buf_str(&out, "<h1>Overview</h1>\n<p>The finance dashboard is on "
                        "its way.</p>\n");
    meterd_page_end(&out);
    meterd_page_reply(rq, 200, &out);
}
