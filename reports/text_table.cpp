// Text table rendering and number formatting.
#include "reports/text_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trainsim {

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::add_rule() { rows_.emplace_back(); }

std::string TextTable::render(const std::string& indent) const {
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) width[c] = columns_[c].header.size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = indent;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = cells[c];
      const std::string pad(width[c] - cell.size(), ' ');
      out += columns_[c].align == Align::kLeft ? cell + pad : pad + cell;
      if (c + 1 < columns_.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> headers;
  for (const auto& col : columns_) headers.push_back(col.header);
  std::string out = line(headers);
  const std::string rule = indent + std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  out += rule;
  for (const auto& row : rows_) out += row.empty() ? rule : line(row);
  return out;
}

std::string format_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string format_fixed(double x, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, x);
  return buffer;
}

std::string format_si(double x, int digits) {
  static const char* const kPrefixes[] = {"", " k", " M", " G", " T", " P", " E", " Z"};
  int power = 0;
  double scaled = x;
  while (std::fabs(scaled) >= 1000.0 && power < 7) {
    scaled /= 1000.0;
    ++power;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g%s", digits, scaled, kPrefixes[power]);
  return buffer;
}

std::string format_percent(double fraction, int digits) { return format_fixed(100.0 * fraction, digits) + "%"; }

}  // namespace trainsim
