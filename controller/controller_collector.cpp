#include "controller/controller_collector.h"

namespace memcg::controller {
namespace {

class ControllerCollector : public Collector {
 public:
  explicit ControllerCollector(const Controller& c) : c_(c) {}
  void collect(ScrapeContext&, metrics::Sink& sink) override { c_.collect(sink); }
  std::vector<const metrics::Desc*> describe() const override { return c_.describe(); }

 private:
  const Controller& c_;
};

}  // namespace

std::unique_ptr<Collector> makeControllerCollector(const Controller& c) {
  return std::make_unique<ControllerCollector>(c);
}

}  // namespace memcg::controller
