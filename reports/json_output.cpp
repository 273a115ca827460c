// JSON envelope and writer.
#include "reports/json_output.hpp"

#include <ostream>

#include "common/provenance.hpp"

namespace trainsim {

nlohmann::ordered_json json_envelope(const std::string& schema, nlohmann::ordered_json inputs) {
  nlohmann::ordered_json doc;
  doc["schema"] = schema;
  doc["schema_version"] = kSchemaVersion;
  doc["context"] = to_json(capture_run_context());
  doc["inputs"] = std::move(inputs);
  return doc;
}

void write_json(std::ostream& out, const nlohmann::ordered_json& doc) { out << doc.dump(2) << "\n"; }

}  // namespace trainsim
