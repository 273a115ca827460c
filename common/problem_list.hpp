// Collects every problem found while reading or validating an input, so the user sees them
// all at once (STYLE.md: "Validation collects every problem and reports them together").
#pragma once

#include <string>
#include <vector>

namespace trainsim {

class ProblemList {
 public:
  void add(std::string problem) { problems_.push_back(std::move(problem)); }
  void add_all(const ProblemList& other) {
    problems_.insert(problems_.end(), other.problems_.begin(), other.problems_.end());
  }
  bool empty() const { return problems_.empty(); }
  size_t size() const { return problems_.size(); }
  const std::vector<std::string>& items() const { return problems_; }
  // Throws InputError carrying every problem (and the hint) when there is at least one.
  void throw_if_any(const std::string& hint = {}) const;

 private:
  std::vector<std::string> problems_;
};

}  // namespace trainsim
