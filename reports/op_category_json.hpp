// The `op_categories` block that predict (--format json) and run (--out) both write: one entry per
// pipeline stage, `{"stage": s, "forward_s": {category: seconds}, "backward_s": {...}}`, seconds per
// iteration with the keys of common/op_category.hpp. Read back strictly for `compare`; an absent
// block (files written before it existed) reads as no stages.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_reader.hpp"
#include "common/op_category.hpp"

namespace trainsim {

nlohmann::ordered_json op_categories_json(const std::vector<OpCategoryTimes>& stages);
std::vector<OpCategoryTimes> read_op_categories(JsonObjectReader& root);

}  // namespace trainsim
