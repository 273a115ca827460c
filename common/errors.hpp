// Typed errors thrown by library code. Only cli/ turns them into messages and exit codes:
// InputError -> 2 (bad usage or input), DeviceError -> 1, InternalError -> 1 (a bug in trainsim).
// An infeasible plan is not an error: it is a result (see plan/ and sim/).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim {

// One or more problems with what the user gave us. Each problem names the file, the JSON path
// or option, the value and the constraint; `hint` says what to try.
class InputError : public std::runtime_error {
 public:
  InputError(std::vector<std::string> problems, std::string hint = {});
  explicit InputError(const std::string& problem, std::string hint = {})
      : InputError(std::vector<std::string>{problem}, std::move(hint)) {}
  const std::vector<std::string>& problems() const { return problems_; }
  const std::string& hint() const { return hint_; }

 private:
  std::vector<std::string> problems_;
  std::string hint_;
};

class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void fail_internal(const char* condition, const char* file, int line, const std::string& what);

}  // namespace trainsim

// An invariant of trainsim itself (never of user input); stays on in release builds.
#define TRAINSIM_ASSERT(cond, what)                                     \
  do {                                                                  \
    if (!(cond)) ::trainsim::fail_internal(#cond, __FILE__, __LINE__, (what)); \
  } while (0)
