// The controller's metrics as a collector, so they are scraped with the rest.
#pragma once

#include <memory>

#include "collectors/collector.h"
#include "controller/controller.h"

namespace memcg::controller {

std::unique_ptr<Collector> makeControllerCollector(const Controller& c);

}  // namespace memcg::controller
