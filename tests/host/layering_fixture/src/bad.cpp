// A library file that includes a bench header: check_layering.cmake must refuse it.
#include "timing.hpp"
