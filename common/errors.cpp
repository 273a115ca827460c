// Message assembly for the typed errors.
#include "common/errors.hpp"

namespace trainsim {

namespace {
std::string join_problems(const std::vector<std::string>& problems) {
  std::string text;
  for (size_t i = 0; i < problems.size(); ++i) {
    if (i > 0) text += "\n";
    text += problems[i];
  }
  return text;
}
}  // namespace

InputError::InputError(std::vector<std::string> problems, std::string hint)
    : std::runtime_error(join_problems(problems)), problems_(std::move(problems)), hint_(std::move(hint)) {}

void fail_internal(const char* condition, const char* file, int line, const std::string& what) {
  throw InternalError(std::string("internal error: ") + what + " (" + condition + " failed at " + file + ":" +
                      std::to_string(line) + ")");
}

}  // namespace trainsim
