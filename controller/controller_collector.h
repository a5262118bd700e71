// The controller's metrics as its part of the metrics registry ("controller").
#pragma once

#include <memory>

#include "metrics/registry.h"
#include "controller/controller.h"

namespace memcg::controller {

std::unique_ptr<metrics::Collectable> makeControllerCollector(const Controller& c);

}  // namespace memcg::controller
