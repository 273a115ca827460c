// Run-context stamp for profiles (see profile_stamp.hpp).
#include "calibrate/profile_stamp.hpp"

#include "common/provenance.hpp"

namespace trainsim {

void stamp_provenance(ProfileProvenance& provenance) {
  const RunContext context = capture_run_context();
  provenance.host = context.host;
  provenance.date_utc = context.time_utc;
  provenance.tool_version = context.tool_version;
  provenance.git_revision = context.git_revision;
}

}  // namespace trainsim
