// The references generated from the binary's own tables (never written by
// hand): the flag reference and the manual page from flagTable() and the
// collector registry, the metric reference from every part's metric Descs.
// `memcg_exporter --help-format=markdown|man|metrics` prints them;
// scripts/gen-docs.sh writes them to docs/ and the lint test
// lint.generated_docs fails when a committed copy is stale.
#pragma once

#include <string>

namespace memcg {

std::string flagReferenceMarkdown();
std::string manPage();
/// Builds each part's metric table (no thread, no tracing, no write to the
/// kernel) and renders name, type, unit, labels, help, part and the source
/// file that writes the name (looked up in the tree the binary was built from).
std::string metricReferenceMarkdown();

}  // namespace memcg
