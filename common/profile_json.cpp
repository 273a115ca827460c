// Profile writing and strict reading (the placeholder is replaced below in this session).
#include "common/profile_json.hpp"
