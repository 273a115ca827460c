// The plan tests' lookup of a lowered op by name (nullptr when the list has none).
#pragma once

#include <string>
#include <vector>

#include "plan/lowering.hpp"

namespace trainsim::test {

inline const Op* find_op(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (name == op.name) return &op;
  }
  return nullptr;
}

}  // namespace trainsim::test
