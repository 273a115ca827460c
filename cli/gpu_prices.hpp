// `--price`: USD per GPU-hour, one bare number for one GPU type, or one per type
// ("h100-sxm-80gb=2.50,h200-sxm-141gb=3.80") when several are compared. A bare price with several
// GPU types is refused (it would price them alike and rank the faster one cheapest), as is a list
// that leaves a type out or names one not asked for.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainsim {

struct GpuPrices {
  std::optional<double> bare;            // "--price 2.5"
  std::map<std::string, double> per_gpu;  // "--price h100-sxm-80gb=2.5,..."
};

// The option's text read (InputError naming --price, the item and the constraint).
GpuPrices parse_gpu_prices(const std::string& text);

// The USD per GPU-hour given for `gpu` when the job compares `gpus` (the --gpu list), or nullopt
// when --price was not given; InputError when the prices do not match the GPU types.
std::optional<double> price_for(const GpuPrices& prices, const std::string& gpu, const std::vector<std::string>& gpus);

}  // namespace trainsim
