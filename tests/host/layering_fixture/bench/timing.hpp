// Stands for bench/timing.hpp in the layering check's fixture.
#pragma once
