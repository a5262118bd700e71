// Web assets compiled into the binary (web/ui/*, embedded by
// cmake/embed_asset.cmake) and the routes that serve them.
//
// index.html is a template: {{version}}, {{revision}}, {{telemetry_path}} and
// {{collectors}} (one <li> per enabled collector) are filled in once at start.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "web/routes.h"

namespace memcg::web {

extern const std::string_view kIndexHtml;  ///< web/ui/index.html
extern const std::string_view kLiveJs;     ///< web/ui/live.js (the live view)
extern const std::string_view kLiveCss;    ///< web/ui/live.css

/// The series the live view's PromQL reads (web/ui/live.js), as series
/// selectors for the history to sample (history::History::select) so the view
/// works without --history.match naming them. Keep in step with live.js.
inline constexpr std::string_view kLiveViewSeries[] = {
    R"sel({__name__=~"memcg_memory_(usage|limit)_bytes|memcg_memory_failcnt_total"})sel",
    R"sel({__name__=~"memcg_memory_events_(max|high|oom_kill)_total"})sel",
    R"sel({__name__=~"memcg_vmscan_reclaim_total|memcg_vmscan_reclaim_stall_seconds_(bucket|sum)"})sel",
    R"sel({__name__=~"memcg_pressure_memory_(waiting|stalled)_seconds_total"})sel",
    R"sel({__name__=~"memcg_controller_actions_total|memcg_exporter_collector_success"})sel",
};

/// index.html with its placeholders filled (values HTML-escaped).
std::string renderIndex(std::string_view telemetryPath,
                        const std::vector<std::string>& collectors);

/// GET / : the landing page and live view; GET /live.js, /live.css: its assets.
void registerRoutes(http::Routes& routes, std::string indexHtml);

}  // namespace memcg::web
