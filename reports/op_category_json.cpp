// op_categories <-> JSON (see the header).
#include "reports/op_category_json.hpp"

#include <string>

namespace trainsim {

namespace {

nlohmann::ordered_json column_json(const std::array<double, kOpCategoryCount>& column) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t c = 0; c < kOpCategoryCount; ++c) j[std::string(kOpCategoryKeys[c])] = column[c];
  return j;
}

void read_column(JsonObjectReader& stage, const std::string& key, std::array<double, kOpCategoryCount>& column) {
  JsonObjectReader r = stage.required_object(key);
  for (size_t c = 0; c < kOpCategoryCount; ++c) column[c] = r.optional_number(std::string(kOpCategoryKeys[c]), 0).value_or(0.0);
  if (r.ok()) r.reject_unknown_keys();
}

}  // namespace

nlohmann::ordered_json op_categories_json(const std::vector<OpCategoryTimes>& stages) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t s = 0; s < stages.size(); ++s) {
    list.push_back({{"stage", s}, {"forward_s", column_json(stages[s].forward_s)}, {"backward_s", column_json(stages[s].backward_s)}});
  }
  return list;
}

std::vector<OpCategoryTimes> read_op_categories(JsonObjectReader& root) {
  std::vector<OpCategoryTimes> stages;
  if (!root.has("op_categories")) {
    root.accept("op_categories");
    return stages;
  }
  for (JsonObjectReader& entry : root.required_object_list("op_categories")) {
    const int64_t stage = entry.required_int("stage", 0);
    if (entry.ok() && stage != static_cast<int64_t>(stages.size())) {
      entry.add_problem("stage", "stage (" + std::to_string(stage) + ") must be " + std::to_string(stages.size()) +
                                     ": the entries list the pipeline stages in order");
    }
    OpCategoryTimes t;
    read_column(entry, "forward_s", t.forward_s);
    read_column(entry, "backward_s", t.backward_s);
    stages.push_back(t);
  }
  return stages;
}

}  // namespace trainsim
