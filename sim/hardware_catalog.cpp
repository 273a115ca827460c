// Placeholder until the hardware catalog lands.
#include "sim/hardware_catalog.hpp"
