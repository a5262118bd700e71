#include <stdexcept>

#include "history/history.h"
#include "common/duration.h"

namespace memcg::history {

FlagList historyFlags(Options& o) {
  return {
      switchFlag("history.enable",
                 "Keep the in-process history and serve /api/v1/query* over it.",
                 o.enable),
      {"history.retention", "How long the history keeps samples.", false,
       [&o](const std::string& v) {
         o.retentionMs = durationFlag("history.retention", v);
       },
       "15m"},
      {"history.interval", "The history sampler's base interval.", false,
       [&o](const std::string& v) { o.intervalMs = durationFlag("history.interval", v); },
       "1s"},
      {"history.series-limit",
       "Series the history holds at most; more are refused and counted.", false,
       [&o](const std::string& v) {
         o.seriesLimit =
             static_cast<size_t>(parseFlagInt("history.series-limit", v, 1, 10'000'000));
       },
       "200000"},
      {"history.match",
       "A series selector the history samples every interval (repeatable; "
       "'{__name__=~\".+\"}' for everything).",
       false,
       [&o](const std::string& v) {
         if (!o.matchGiven) o.match.clear();
         o.matchGiven = true;
         o.match.push_back(v);
       },
       std::string(kDefaultMatch)},
      {"query.timeout",
       "Longest a query API evaluation may take (and the default of ?timeout=); past "
       "it the query fails with errorType \"timeout\".",
       false,
       [&o](const std::string& v) {
         o.queryTimeoutMs = durationFlag("query.timeout", v);
       },
       "2m"},
      {"query.max-samples",
       "Samples one query API request may load; more fail with errorType \"execution\".",
       false,
       [&o](const std::string& v) {
         o.queryMaxSamples = parseFlagInt("query.max-samples", v, 1, 1'000'000'000);
       },
       "50000000"},
  };
}

}  // namespace memcg::history
