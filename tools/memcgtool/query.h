// `memcgtool query instant|range`: asks any server with Prometheus' HTTP API
// (/api/v1/query, /api/v1/query_range) and prints the result like promtool.
#pragma once

#include <iosfwd>
#include <string>

namespace memcg::tool {

int queryMain(int argc, char** argv, std::ostream& out, std::ostream& err);

/// Renders a Prometheus API JSON response body like promtool's output;
/// false (with the error text) for an error response or bad JSON.
bool renderQueryResponse(const std::string& body, std::string& text);

}  // namespace memcg::tool
