#include "tests/support/temp_tree.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace memcg::test {

TempTree::TempTree() {
  std::string tmpl = (fs::temp_directory_path() / "memcg_exporter_test_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  root_ = tmpl;
}

TempTree::~TempTree() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

void TempTree::write(const std::string& rel, std::string_view content) const {
  fs::path p = path(rel);
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
}

std::string TempTree::read(const std::string& rel) const {
  std::ifstream f(path(rel), std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void TempTree::mkdir(const std::string& rel) const { fs::create_directories(path(rel)); }

void TempTree::remove(const std::string& rel) const { fs::remove_all(path(rel)); }

void TempTree::copyFixture(const std::string& fixture, const std::string& rel) const {
  fs::create_directories(path(rel));
  fs::copy(fixturePath(fixture), path(rel), fs::copy_options::recursive);
}

std::string fixturePath(const std::string& rel) {
  return std::string(MEMCG_SOURCE_DIR) + "/tests/fixtures/" + rel;
}

}  // namespace memcg::test
