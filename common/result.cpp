#include "common/result.h"

#include <cstring>

namespace memcg {

std::string Error::message() const {
  std::string m = path;
  m += ": ";
  m += std::strerror(err);
  if (!detail.empty()) {
    m += ": ";
    m += detail;
  }
  return m;
}

Error makeError(int err, std::string path, std::string detail) {
  return Error{err, std::move(path), std::move(detail)};
}

}  // namespace memcg
