// ProblemList -> InputError.
#include "common/problem_list.hpp"

#include "common/errors.hpp"

namespace trainsim {

void ProblemList::throw_if_any(const std::string& hint) const {
  if (!problems_.empty()) throw InputError(problems_, hint);
}

}  // namespace trainsim
