// The datasheet cost model's constants as shipped. Their meaning and the fit that produced them
// are in docs/cost-model.md; `trainsim validate --fit` reruns the fit on the published runs'
// fitting half and prints new values (it never changes these silently).
#include "sim/cost_model.hpp"

namespace trainsim {

const EfficiencyConstants& default_efficiency_constants() {
  static const EfficiencyConstants constants = [] {
    EfficiencyConstants c;
    c.provenance = "initial estimates, not yet fitted";
    return c;
  }();
  return constants;
}

}  // namespace trainsim
