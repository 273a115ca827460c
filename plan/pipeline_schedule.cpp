// Placeholder until the schedules land.
#include "plan/pipeline_schedule.hpp"
