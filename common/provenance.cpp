// Captures the run context (time, host) and joins it with the build's version and revision.
#include "common/provenance.hpp"

#include <unistd.h>

#include <array>
#include <ctime>

#include <nlohmann/json.hpp>

namespace trainsim {

RunContext capture_run_context() {
  RunContext context;
  context.tool_version = tool_version();
  context.git_revision = git_revision();
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::array<char, 32> stamp{};
  std::strftime(stamp.data(), stamp.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  context.time_utc = stamp.data();
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) == 0) context.host = host.data();
  return context;
}

nlohmann::ordered_json to_json(const RunContext& context) {
  nlohmann::ordered_json j;
  j["tool"] = "trainsim";
  j["tool_version"] = context.tool_version;
  j["git_revision"] = context.git_revision;
  j["time_utc"] = context.time_utc;
  j["host"] = context.host;
  return j;
}

}  // namespace trainsim
