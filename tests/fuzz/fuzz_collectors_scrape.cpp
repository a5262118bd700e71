// The collectors end to end on fuzzed kernel files: copies of the committed
// v1 and v2 fixture trees (tests/fixtures/cgroupfs) and procfs, one file of
// one tree replaced by the input, one scrape, and the exposition checked line
// by line (metric and label names, label escaping, values). A file that does
// not parse must fail its collector, never reach the text half-formed.
//
// Input: byte 0 picks the tree (bit 0) and the file (the rest); bytes 1.. are
// the file's content. Seeds: tests/fuzz/seeds/collectors_scrape.
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "collectors/registry.h"
#include "cgroupfs/discovery.h"
#include "common/parse.h"
#include "collectors/scraper.h"
#include "tests/support/fuzz_support.h"

using namespace memcg;

namespace {

bool nameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

/// Length of the metric/label name at the start of `s` (0: none).
size_t nameLen(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && nameChar(s[i], i == 0)) ++i;
  return i;
}

bool validValue(std::string_view v) {
  if (v == "+Inf" || v == "-Inf" || v == "NaN") return true;
  std::string s(v);
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && std::isfinite(d);
}

/// One line of text format 0.0.4 (the subset this exporter writes).
void checkLine(std::string_view line) {
  FUZZ_CHECK(!line.empty());
  if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
    std::string_view rest = line.substr(7);
    size_t n = nameLen(rest);
    FUZZ_CHECK(n > 0 && (n == rest.size() || rest[n] == ' '));
    return;
  }
  size_t n = nameLen(line);
  FUZZ_CHECK(n > 0 && n < line.size());
  std::string_view rest = line.substr(n);
  if (rest.front() == '{') {
    rest.remove_prefix(1);
    while (rest.front() != '}') {
      size_t ln = nameLen(rest);
      FUZZ_CHECK(ln > 0 && rest.substr(ln, 2) == "=\"");
      rest.remove_prefix(ln + 2);
      size_t i = 0;
      for (; i < rest.size() && rest[i] != '"'; ++i) {
        FUZZ_CHECK(rest[i] != '\n');
        if (rest[i] == '\\') {
          FUZZ_CHECK(i + 1 < rest.size());
          const char e = rest[++i];
          FUZZ_CHECK(e == '\\' || e == '"' || e == 'n');
        }
      }
      FUZZ_CHECK(i < rest.size());
      rest.remove_prefix(i + 1);
      FUZZ_CHECK(!rest.empty() && (rest.front() == ',' || rest.front() == '}'));
      if (rest.front() == ',') rest.remove_prefix(1);
      FUZZ_CHECK(!rest.empty());
    }
    rest.remove_prefix(1);
  }
  FUZZ_CHECK(!rest.empty() && rest.front() == ' ');
  FUZZ_CHECK(validValue(rest.substr(1)));
}

struct Tree {
  std::string root;                    // the cgroupfs copy
  std::vector<std::string> files;      // fuzzable files, absolute
  std::vector<std::string> originals;  // their committed content
  std::unique_ptr<Discovery> discovery;
  std::unique_ptr<WalkScheduler> walks;
  std::unique_ptr<Scraper> scraper;
};

std::string readAll(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

fuzz::ScratchDir* scratch;
Tree trees[2];

void setUp(Tree& t, const std::string& fixture, const std::string& child,
           const std::vector<std::string>& names) {
  namespace fs = std::filesystem;
  t.root = scratch->path(fixture);
  fs::copy(std::string(MEMCG_SOURCE_DIR) + "/tests/fixtures/cgroupfs/" + fixture, t.root,
           fs::copy_options::recursive);
  const std::string base = fixture == "v1" ? t.root + "/memory" : t.root;
  for (const auto& n : names) t.files.push_back(base + "/" + child + "/" + n);
  t.files.push_back(scratch->path("procfs/vmstat"));
  t.files.push_back(scratch->path("procfs/pressure/memory"));
  for (const auto& f : t.files) t.originals.push_back(readAll(f));
  DiscoveryOptions o;
  o.cgroupfsRoot = t.root;
  o.procfsRoot = scratch->path("procfs");
  CollectorInputs cfg;
  cfg.procfsRoot = o.procfsRoot;
  cfg.memoryStat.fields = ".*";  // every key, known or not
  std::vector<EnabledCollector> cs;
  for (const auto& c : collectorRegistry()) {
    if (c.defaultEnabled && !c.live) cs.push_back({std::string(c.name), c.make(cfg)});
  }
  t.discovery = std::make_unique<Discovery>(o);
  t.walks = std::make_unique<WalkScheduler>(*t.discovery);
  t.scraper = std::make_unique<Scraper>(*t.walks, std::move(cs));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  scratch = new fuzz::ScratchDir();
  std::filesystem::copy(std::string(MEMCG_SOURCE_DIR) + "/tests/fixtures/procfs",
                        scratch->path("procfs"),
                        std::filesystem::copy_options::recursive);
  setUp(trees[0], "v1", "web",
        {"memory.stat", "memory.oom_control", "memory.failcnt", "memory.limit_in_bytes",
         "memory.usage_in_bytes", "memory.memsw.limit_in_bytes"});
  setUp(trees[1], "v2", "kubepods",
        {"memory.stat", "memory.events", "memory.events.local", "memory.swap.events",
         "memory.pressure", "memory.max", "memory.current", "memory.high"});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Tree& t = trees[data[0] & 1];
  const size_t which = (data[0] >> 1) % t.files.size();
  scratch->write(t.files[which].substr(scratch->root().size() + 1),
                 fuzz::asText(data + 1, size - 1));
  std::string text;
  t.scraper->scrapeText(text);
  std::string_view rest = text, line;
  FUZZ_CHECK(!text.empty() && text.back() == '\n');
  while (nextLine(rest, line)) {
    if (rest.empty() && line.empty()) break;
    checkLine(line);
  }
  scratch->write(t.files[which].substr(scratch->root().size() + 1), t.originals[which]);
  return 0;
}
