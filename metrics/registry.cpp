#include "metrics/registry.h"

#include <stdexcept>

namespace memcg::metrics {

std::shared_ptr<const void> Registry::Collected::of(std::string_view name) const {
  for (const auto& [n, v] : kept)
    if (n == name) return v;
  return nullptr;
}

void Registry::add(std::string name, Collectable& part) {
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& p : parts_)
    if (p.name == name) throw std::logic_error("metrics registry: '" + name + "' registered twice");
  parts_.push_back({std::move(name), &part});
}

void Registry::add(std::string name, std::unique_ptr<Collectable> part) {
  Collectable& ref = *part;
  add(std::move(name), ref);
  std::lock_guard<std::mutex> g(mu_);
  owned_.push_back(std::move(part));
}

std::vector<Registry::Part> Registry::snapshot() const {
  std::lock_guard<std::mutex> g(mu_);
  return parts_;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const auto& p : snapshot()) out.push_back(p.name);
  return out;
}

Registry::Collected Registry::collect(Sink& sink, const Filter* filter) const {
  Collected c;
  for (const auto& p : snapshot()) {
    if (filter && filter->family) {
      bool want = false;
      for (const auto* d : p.part->describe()) {
        if (filter->family(d->name)) {
          want = true;
          break;
        }
      }
      if (!want) continue;
    }
    c.kept.emplace_back(p.name, p.part->collect(sink, filter));
  }
  return c;
}

std::vector<const Desc*> Registry::describe() const {
  std::vector<const Desc*> out;
  for (const auto& p : snapshot()) {
    auto d = p.part->describe();
    out.insert(out.end(), d.begin(), d.end());
  }
  return out;
}

}  // namespace memcg::metrics
