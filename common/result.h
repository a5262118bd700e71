// Value-or-error for every kernel access (shaped like oomd's SystemMaybe).
//
// Kernel I/O on the scrape and control paths never throws: it returns a
// Result<T>, which is either a T or an Error naming the errno, the path and,
// for parse failures, the offending line.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace memcg {

struct Error {
  int err = 0;          ///< errno, or EINVAL for a parse failure
  std::string path;     ///< the file or directory involved
  std::string detail;   ///< what went wrong (e.g. the malformed line)

  /// A cgroup that vanished: ENOENT before open, ENODEV after rmdir of an
  /// open file. That is a normal outcome, not a failure.
  bool gone() const { return err == ENOENT || err == ENODEV; }
  std::string message() const;
};

Error makeError(int err, std::string path, std::string detail = {});

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                 // NOLINT
  Result(Error error) : v_(std::move(error)) {}             // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Result of an operation that yields nothing but may fail.
struct Ok {};
using Status = Result<Ok>;

}  // namespace memcg
