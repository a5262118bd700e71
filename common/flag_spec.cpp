#include "common/flag_spec.h"

#include <regex>
#include <stdexcept>

#include "common/parse.h"

namespace memcg {

int parseFlagInt(const std::string& flag, const std::string& v, int lo, int hi) {
  auto n = parseI64(v);
  if (!n || *n < lo || *n > hi) {
    throw std::invalid_argument("--" + flag + " wants a whole number from " +
                                std::to_string(lo) + " to " + std::to_string(hi) +
                                ", got \"" + v + "\"");
  }
  return static_cast<int>(*n);
}

const std::string& checkFlagRegex(const std::string& flag, const std::string& v) {
  try {
    std::regex re(v, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument("--" + flag + " is not a valid regex \"" + v + "\": " +
                                e.what());
  }
  return v;
}

FlagSpec switchFlag(std::string name, std::string help, bool& target) {
  return FlagSpec{std::move(name), std::move(help), true,
                  [&target](const std::string& v) { target = v == "true"; }, "false"};
}

}  // namespace memcg
