// One command-line flag, declared by the part whose options it fills.
//
// Each part (discovery, each collector, the controller, the web server)
// declares its `--<part>.<opt>` flags beside its code as a FlagList bound to
// its own options struct; exporter/flags.cpp composes the lists into the
// command line and the --help text. Both "--flag=value" and "--flag value"
// work; a switch (isBool) also takes --no-flag and --flag=true|false.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace memcg {

struct FlagSpec {
  std::string name;  ///< without the leading "--"
  std::string help;
  bool isBool = false;
  /// Stores the value ("true"/"false" for a switch). Throws
  /// std::invalid_argument with a one-line reason for a bad value.
  std::function<void(const std::string&)> set;
  std::string defaultText;  ///< shown in --help for flags that take a value
};

using FlagList = std::vector<FlagSpec>;

/// A whole number in [lo, hi] for --`flag`; throws std::invalid_argument.
int parseFlagInt(const std::string& flag, const std::string& value, int lo, int hi);

/// `value` if it is a valid ECMAScript regex (the flavour every regex flag
/// uses); throws std::invalid_argument naming --`flag` otherwise, so a bad
/// pattern is a bad flag (exit 2), not a failure at start-up.
const std::string& checkFlagRegex(const std::string& flag, const std::string& value);

/// A switch bound to `target`.
FlagSpec switchFlag(std::string name, std::string help, bool& target);

}  // namespace memcg
