// metrics::Registry on its own: parts collected in registration order, a
// filter skips a part none of whose families it wants, a name registered
// twice is refused, and what a part keeps alive is returned by name.
#include "metrics/registry.h"

#include <gtest/gtest.h>

#include "metrics/descriptors.h"

namespace memcg::metrics {
namespace {

const Desc kA = nodeGauge("test_a", "A.");
const Desc kB = nodeGauge("test_b", "B.");

class Part final : public Collectable {
 public:
  Part(const Desc& d, std::shared_ptr<const void> keep) : d_(d), keep_(std::move(keep)) {}
  std::shared_ptr<const void> collect(Sink& sink, const Filter* f) override {
    ++calls;
    sawFilter = f != nullptr;
    sink.add(d_, {}, 1);
    return keep_;
  }
  std::vector<const Desc*> describe() const override { return {&d_}; }
  int calls = 0;
  bool sawFilter = false;

 private:
  const Desc& d_;
  std::shared_ptr<const void> keep_;
};

TEST(MetricsRegistry, CollectsEveryPartInOrder) {
  Registry r;
  auto tree = std::make_shared<const int>(7);
  Part a(kA, tree);
  r.add("a", a);
  r.add("b", std::make_unique<FunctionCollectable>([](Sink& s) { s.add(kB, {}, 2); },
                                                   [] { return std::vector<const Desc*>{&kB}; }));
  EXPECT_EQ(r.names(), (std::vector<std::string>{"a", "b"}));
  Sink sink;
  auto c = r.collect(sink);
  ASSERT_EQ(sink.families().size(), 2u);
  EXPECT_EQ(sink.families()[0].desc->name, "test_a");
  EXPECT_EQ(sink.families()[1].desc->name, "test_b");
  EXPECT_EQ(c.of("a"), tree);
  EXPECT_EQ(c.of("b"), nullptr);
  EXPECT_FALSE(a.sawFilter);
  auto d = r.describe();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], &kA);
  EXPECT_EQ(d[1], &kB);
}

TEST(MetricsRegistry, AFilterSkipsPartsItWantsNothingOf) {
  Registry r;
  Part a(kA, nullptr), b(kB, nullptr);
  r.add("a", a);
  r.add("b", b);
  Filter f;
  f.family = [](std::string_view name) { return name == "test_b"; };
  Sink sink;
  r.collect(sink, &f);
  EXPECT_EQ(a.calls, 0);
  EXPECT_EQ(b.calls, 1);
  EXPECT_TRUE(b.sawFilter);
  ASSERT_EQ(sink.families().size(), 1u);
  EXPECT_EQ(sink.families()[0].desc->name, "test_b");
}

TEST(MetricsRegistry, ANameRegisteredTwiceIsRefused) {
  Registry r;
  Part a(kA, nullptr), again(kB, nullptr);
  r.add("a", a);
  EXPECT_THROW(r.add("a", again), std::logic_error);
  EXPECT_EQ(r.names(), (std::vector<std::string>{"a"}));
}

}  // namespace
}  // namespace memcg::metrics
