// hopattn_layout_report: the C ABI of the layout checker (include/hopattn/layout.h).
#include "hopattn/layout.h"

#include <cstring>
#include <exception>
#include <sstream>
#include <string>

#include "layout_command.hpp"

extern "C" int32_t hopattn_layout_report(const char* expr, int32_t check, char* buf, size_t cap, size_t* needed) {
  if (needed != nullptr) *needed = 0;
  if (expr == nullptr || (buf == nullptr && cap > 0)) return -1;
  std::ostringstream out, err;
  int32_t code = 2;
  try {
    code = hopattn::layout::layout_report(expr, check != 0, out, err);
  } catch (const std::exception& e) {  // nothing escapes a C function
    err << "hopattn layout: error: " << e.what() << '\n';
    code = 2;
  }
  const std::string text = out.str() + err.str();
  if (needed != nullptr) *needed = text.size() + 1;
  if (cap > 0) {
    const size_t n = text.size() < cap - 1 ? text.size() : cap - 1;
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return code;
}
