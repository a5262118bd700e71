#include "tracing/lock_symbols.h"

#include <algorithm>
#include <charconv>

#include "common/file.h"
#include "common/parse.h"

namespace memcg::tracing {

Kallsyms Kallsyms::parse(std::string_view text, size_t min_data_symbols) {
  struct Sym {
    uint64_t addr;
    uint32_t name;
  };
  std::vector<Sym> code, data;
  Kallsyms k;
  std::string_view line;
  while (nextLine(text, line)) {
    // "ffffffff81000000 T _stext" or "... t name\t[module]"
    size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || line.size() < sp1 + 4 || line[sp1 + 2] != ' ')
      continue;
    uint64_t addr = 0;
    auto r = std::from_chars(line.data(), line.data() + sp1, addr, 16);
    if (r.ec != std::errc() || r.ptr != line.data() + sp1 || addr == 0) continue;
    std::vector<Sym>* dst = nullptr;
    switch (line[sp1 + 1]) {
      case 't': case 'T': case 'w': case 'W':
        dst = &code;
        break;
      case 'd': case 'D': case 'b': case 'B': case 'r': case 'R':
        dst = &data;
        break;
      default:
        continue;  // absolute, percpu offsets (small numbers), ...
    }
    std::string_view name = line.substr(sp1 + 3);
    if (size_t tab = name.find('\t'); tab != std::string_view::npos) name = name.substr(0, tab);
    if (name.empty()) continue;
    dst->push_back({addr, static_cast<uint32_t>(k.names_.size())});
    k.names_.append(name);
    k.names_.push_back('\0');
  }
  auto fill = [](std::vector<Sym>& v, Table& t) {
    std::stable_sort(v.begin(), v.end(), [](const Sym& a, const Sym& b) { return a.addr < b.addr; });
    t.addrs.reserve(v.size());
    t.names.reserve(v.size());
    for (const Sym& s : v) {
      t.addrs.push_back(s.addr);
      t.names.push_back(s.name);
    }
  };
  fill(code, k.text_);
  if (!data.empty() && data.size() >= min_data_symbols) fill(data, k.data_);
  return k;
}

Result<Kallsyms> Kallsyms::load(const std::string& path) {
  auto text = readWholeFile(path);
  if (!text.ok()) return text.error();
  return parse(*text);
}

std::optional<size_t> Kallsyms::Table::find(uint64_t addr) const {
  auto it = std::upper_bound(addrs.begin(), addrs.end(), addr);
  if (it == addrs.begin() || it == addrs.end()) return std::nullopt;  // no bound above
  size_t i = static_cast<size_t>(it - addrs.begin()) - 1;
  while (i > 0 && addrs[i - 1] == addrs[i]) --i;  // aliases: the first listed
  if (addr - addrs[i] >= kMaxSymbolSpan) return std::nullopt;
  return i;
}

std::string Kallsyms::format(const Table& t, size_t i, uint64_t addr) const {
  std::string s(names_.c_str() + t.names[i]);
  if (uint64_t off = addr - t.addrs[i]; off != 0) s += "+" + hexAddr(off);
  return s;
}

std::optional<std::string> Kallsyms::symbolizeText(uint64_t addr) const {
  auto i = text_.find(addr);
  if (!i) return std::nullopt;
  return format(text_, *i, addr);
}

std::optional<std::string_view> Kallsyms::textName(uint64_t addr) const {
  auto i = text_.find(addr);
  if (!i) return std::nullopt;
  return std::string_view(names_.c_str() + text_.names[*i]);
}

std::optional<std::string> Kallsyms::symbolizeData(uint64_t addr) const {
  auto i = data_.find(addr);
  if (!i) return std::nullopt;
  return format(data_, *i, addr);
}

std::string hexAddr(uint64_t addr) {
  char buf[24] = "0x";
  auto r = std::to_chars(buf + 2, buf + sizeof buf, addr, 16);
  return std::string(buf, r.ptr);
}

const Kallsyms* KallsymsOnce::get(const std::string& path) {
  std::call_once(once_, [&] {
    auto k = Kallsyms::load(path);
    if (k.ok()) syms_ = std::make_unique<Kallsyms>(std::move(k.value()));
  });
  return syms_.get();
}

}  // namespace memcg::tracing
