// Profile summary rendering.
#include "reports/profile_report.hpp"

#include <algorithm>

#include "reports/text_table.hpp"

namespace trainsim {

std::string render_profile_summary(const HardwareProfile& p) {
  std::string out = "Profile of " + p.provenance.device + " (" + p.provenance.device_kind + ", " +
                    std::to_string(p.provenance.devices) + (p.provenance.device_kind == "cpu" ? " ranks" : " devices") +
                    ", " + p.provenance.date_utc + ")\n";
  TextTable t({{"table", TextTable::Align::kLeft}, {"points"}, {"best"}, {"median"}});
  for (const GemmTable& g : p.gemm) {
    std::vector<double> rates;
    for (const GemmPoint& pt : g.points) {
      rates.push_back(2.0 * static_cast<double>(pt.m) * static_cast<double>(pt.n) * static_cast<double>(pt.k) / pt.timing.median_s);
    }
    std::sort(rates.begin(), rates.end());
    t.add_row({"GEMM " + g.dtype, std::to_string(g.points.size()), format_si(rates.back()) + "FLOP/s",
               format_si(rates[rates.size() / 2]) + "FLOP/s"});
  }
  for (const GemmShapeTable& g : p.gemm_shapes) {  // measured shapes (a trace): not a grid
    std::vector<double> rates;
    for (const GemmShapePoint& pt : g.points) {
      rates.push_back(2.0 * static_cast<double>(pt.m) * static_cast<double>(pt.n) * static_cast<double>(pt.k) / pt.timing.median_s);
    }
    std::sort(rates.begin(), rates.end());
    t.add_row({"GEMM " + g.dtype + " shapes", std::to_string(g.points.size()), format_si(rates.back()) + "FLOP/s",
               format_si(rates[rates.size() / 2]) + "FLOP/s"});
  }
  for (const MemoryBoundTable& m : p.memory_bound) {
    double best = 0;
    for (const MemoryBoundPoint& pt : m.points) best = std::max(best, pt.bytes / pt.timing.median_s);
    t.add_row({"memory " + m.kernel, std::to_string(m.points.size()), format_si(best) + "B/s", ""});
  }
  for (const AttentionTable& a : p.attention) t.add_row({"attention " + a.kernel, std::to_string(a.points.size()), "", ""});
  for (const CollectiveTable& c : p.collectives) {
    const CollectivePoint& last = c.points.back();
    t.add_row({c.kind + " x" + std::to_string(c.ranks), std::to_string(c.points.size()),
               "busbw " + format_fixed(last.busbw_gb_per_s, 2) + " GB/s",
               "alpha " + format_fixed(c.fit.alpha_s * 1e6, 1) + " us, fit rms " + format_percent(c.fit.residual_rms_rel)});
  }
  out += t.render();
  for (const std::string& n : p.notes) out += "  note: " + n + "\n";
  return out;
}

}  // namespace trainsim
