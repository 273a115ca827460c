// Reading `--price` and matching its prices to the GPU types asked for.
#include "cli/gpu_prices.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <algorithm>

#include "common/errors.hpp"
#include "common/nearest_name.hpp"

namespace trainsim {

namespace {

constexpr double kMaxUsdPerGpuHour = 1e4;  // far beyond any rental rate: a typo (same bound as before)
const char* const kExample = "--price h100-sxm-80gb=2.50,h200-sxm-141gb=3.80";

double read_price(const std::string& text, const std::string& item) {
  char* end = nullptr;
  errno = 0;
  const double usd = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(usd) || usd < 0 || usd > kMaxUsdPerGpuHour) {
    throw InputError("--price: \"" + item + "\": a price is a finite number from 0 to 10000 (USD per GPU-hour)",
                     std::string("e.g. --price 2.50 for one GPU type, ") + kExample + " for several");
  }
  return usd;
}

std::string price_list(const std::vector<std::string>& gpus) {
  std::string list;
  for (const std::string& g : gpus) list += (list.empty() ? "" : ",") + g + "=...";
  return list;
}

std::string usd_text(double usd) {
  std::ostringstream out;
  out << usd;
  return out.str();
}

}  // namespace

GpuPrices parse_gpu_prices(const std::string& text) {
  GpuPrices prices;
  if (text.find('=') == std::string::npos) {
    prices.bare = read_price(text, text);
    return prices;
  }
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError("--price: \"" + item + "\" is not GPU=USD: with several GPU types every price names its GPU",
                       std::string("e.g. ") + kExample);
    }
    const std::string gpu = item.substr(0, eq);
    if (prices.per_gpu.count(gpu)) throw InputError("--price: " + gpu + " is priced twice", "give each GPU type one price");
    prices.per_gpu[gpu] = read_price(item.substr(eq + 1), item);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return prices;
}

std::optional<double> price_for(const GpuPrices& prices, const std::string& gpu, const std::vector<std::string>& gpus) {
  if (prices.bare) {
    if (gpus.size() > 1) {
      throw InputError("--price " + usd_text(*prices.bare) + ": one price for " + std::to_string(gpus.size()) +
                           " GPU types (" + join_names(gpus) + ") would price them alike and rank the faster one cheapest",
                       "give each type its price: --price " + price_list(gpus) + " (or leave --price out for the catalog's "
                       "reference prices: trainsim catalog)");
    }
    return prices.bare;
  }
  if (prices.per_gpu.empty()) return std::nullopt;
  for (const auto& [name, usd] : prices.per_gpu) {
    if (std::find(gpus.begin(), gpus.end(), name) == gpus.end()) {
      throw InputError("--price: " + name + " is not one of the GPU types asked for (" + join_names(gpus) + ")" +
                           did_you_mean(name, gpus),
                       "price the GPUs of --gpu / --cluster: --price " + price_list(gpus));
    }
  }
  const auto it = prices.per_gpu.find(gpu);
  if (it == prices.per_gpu.end()) {
    throw InputError("--price gives no price for " + gpu + " (it prices " + std::to_string(prices.per_gpu.size()) + " of " +
                         std::to_string(gpus.size()) + " GPU types)",
                     "give every GPU type its price: --price " + price_list(gpus) + ", or leave --price out for the "
                     "catalog's reference prices");
  }
  return it->second;
}

}  // namespace trainsim
