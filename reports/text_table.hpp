// Plain-text tables for terminal output: column headers, right-aligned numbers, left-aligned
// text, optional section rules. Plus the number formats our tables share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim {

class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string header;
    Align align = Align::kRight;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells);
  void add_rule();  // a horizontal line before the next row
  std::string render(const std::string& indent = "  ") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

std::string format_count(int64_t n);               // 8,030,261,248
std::string format_fixed(double x, int digits);    // 12.35
std::string format_si(double x, int digits = 3);   // 8.03 G, 1.23 P (1e3 steps)
std::string format_percent(double fraction, int digits = 1);  // 44.1%

}  // namespace trainsim
