#include "controller/controller_collector.h"

namespace memcg::controller {
namespace {

class ControllerCollector final : public metrics::Collectable {
 public:
  explicit ControllerCollector(const Controller& c) : c_(c) {}
  std::shared_ptr<const void> collect(metrics::Sink& sink, const metrics::Filter*) override {
    c_.collect(sink);
    return nullptr;
  }
  std::vector<const metrics::Desc*> describe() const override { return c_.describe(); }

 private:
  const Controller& c_;
};

}  // namespace

std::unique_ptr<metrics::Collectable> makeControllerCollector(const Controller& c) {
  return std::make_unique<ControllerCollector>(c);
}

}  // namespace memcg::controller
