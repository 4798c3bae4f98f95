// Building Status messages and carrying a Status across the C ABI (no exception escapes it).
#pragma once

#include <cstdio>
#include <exception>
#include <sstream>
#include <string>

#include "hopattn/hopattn.hpp"

namespace hopattn {

// Concatenates anything streamable: cat("q.shape[", i, "] is negative: ", v).
template <typename... Ts>
std::string cat(const Ts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

inline hopattn_status_t to_c_status(const Status& s) {
  hopattn_status_t out{};
  out.code = static_cast<hopattn_status_code_t>(s.code());
  std::snprintf(out.message, sizeof(out.message), "%s", s.message().c_str());
  return out;
}

// Runs f() -> Status for a C entry point: exceptions become kInternal with their message.
template <typename F>
hopattn_status_t guarded_c_call(F&& f) {
  try {
    return to_c_status(f());
  } catch (const std::exception& e) {
    return to_c_status(Status(StatusCode::kInternal, e.what()));
  } catch (...) {
    return to_c_status(Status(StatusCode::kInternal, "unknown exception"));
  }
}

}  // namespace hopattn
