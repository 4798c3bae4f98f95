// Strict command-line numbers for the CLI and the bench: the whole token must be the number (no
// "12abc", no "1e30" read as 1, no empty string), in the flag's range; a failure throws
// std::invalid_argument whose message names the flag, the token and the range.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hopattn::cli {

inline std::string range_text(int64_t lo, int64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

inline int64_t parse_int(const std::string& flag, const std::string& token, int64_t lo, int64_t hi) {
  const std::string what = flag + ": '" + token + "' is not an integer in " + range_text(lo, hi);
  if (token.empty() || !(token[0] == '-' || (token[0] >= '0' && token[0] <= '9'))) throw std::invalid_argument(what);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(token.c_str(), &end, 10);
  if (end != token.c_str() + token.size() || errno == ERANGE || v < lo || v > hi) throw std::invalid_argument(what);
  return int64_t(v);
}

inline double parse_real(const std::string& flag, const std::string& token, double lo, double hi) {
  std::ostringstream range;
  range << "[" << lo << ", " << hi << "]";
  const std::string what = flag + ": '" + token + "' is not a number in " + range.str();
  if (token.empty() || token[0] == ' ' || token[0] == '\t') throw std::invalid_argument(what);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);
  if (end != token.c_str() + token.size() || errno == ERANGE || !std::isfinite(v) || v < lo || v > hi)
    throw std::invalid_argument(what);
  return v;
}

// "a,b,c": at least one item, each parsed by parse_int.
inline std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  if (text.empty()) throw std::invalid_argument(flag + ": an empty list (give at least one value)");
  std::vector<int64_t> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw std::invalid_argument(flag + ": an empty item in '" + text + "'");
    out.push_back(parse_int(flag, item, lo, hi));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace hopattn::cli
