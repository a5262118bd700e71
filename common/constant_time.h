// Comparing secrets (bearer tokens, password hashes) without leaking, through
// timing, where the first difference is.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace memcg {

/// True if a == b; the time taken depends only on the longer length.
inline bool constantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

}  // namespace memcg
