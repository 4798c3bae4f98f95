// Building Status messages and carrying a Status across the C ABI (no exception escapes it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>

#include "hopattn/hopattn.hpp"
#include "hopattn/kvcache.h"

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

// The size of an argument struct as its first ABI-2 release had it: a caller built against that
// header (or any later one) passes at least this many bytes, and the fields past its struct_size
// read as zero, the value that keeps the earlier behaviour. Structs that have grown since say so
// here.
template <class T>
constexpr size_t kFirstReleasedSize = sizeof(T);
template <>
inline constexpr size_t kFirstReleasedSize<hopattn_attention_fwd_args_t> =
    offsetof(hopattn_attention_fwd_args_t, window);  // 0.2: up to `causal`
template <>
inline constexpr size_t kFirstReleasedSize<hopattn_kvcache_args_t> =
    offsetof(hopattn_kvcache_args_t, page_table);  // 0.3: up to `v_tail`
template <>
inline constexpr size_t kFirstReleasedSize<hopattn_kvcache_append_args_t> =
    offsetof(hopattn_kvcache_append_args_t, page_table);  // 0.3: up to `seqlens_out`
template <>
inline constexpr size_t kFirstReleasedSize<hopattn_fp8_quantize_args_t> =
    offsetof(hopattn_fp8_quantize_args_t, hadamard);  // 0.5's first form: up to `descale`

// Reads a caller's argument struct of the C ABI into `out` by the rules of hopattn.h
// ("Extensible argument structs"): struct_size bytes at most, every byte past this library's
// struct zero, the fields past a smaller (older) caller's struct zero. `name` is the argument's
// name in messages ("args").
template <class T>
Status read_versioned_args(const T* in, T* out, const char* name) {
  if (in == nullptr) return Status::invalid(cat(name, ": null pointer"));
  uint32_t size = 0;
  std::memcpy(&size, in, sizeof(size));
  constexpr uint32_t kMaxPlausible = 1u << 16;
  if (size == 0)
    return Status::invalid(cat(name, ".struct_size: 0; set it to sizeof the struct (", sizeof(T),
                               " bytes here), e.g. with the HOPATTN_*_ARGS_INIT macro or the C++ types"));
  if (size < kFirstReleasedSize<T>)
    return Status::invalid(cat(name, ".struct_size: ", size, " is smaller than this struct ever was (",
                               kFirstReleasedSize<T>, " bytes; ", sizeof(T), " in this library, ABI version ",
                               HOPATTN_ABI_VERSION, ")"));
  if (size > kMaxPlausible)
    return Status::invalid(cat(name, ".struct_size: ", size, " is not a plausible struct size (at most ", kMaxPlausible,
                               ")"));
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(in);
  for (uint32_t i = uint32_t(sizeof(T)); i < size; ++i)
    if (bytes[i] != 0)
      return Status::unsupported(cat(name, ": byte ", i, " of a ", size, "-byte struct is set, past the ", sizeof(T),
                                     " bytes this library knows (ABI version ", HOPATTN_ABI_VERSION,
                                     "): a field of a newer hopattn.h"));
  std::memset(static_cast<void*>(out), 0, sizeof(T));
  std::memcpy(static_cast<void*>(out), in, size < sizeof(T) ? size : sizeof(T));
  if (out->reserved != 0) return Status::invalid(cat(name, ".reserved: must be 0, got ", out->reserved));
  out->struct_size = uint32_t(sizeof(T));  // what this library read
  return Status();
}

// The C++ calls' form of the same rule: their structs were made by this header (VersionedArgs),
// so struct_size must be exactly this library's.
template <class T>
Status check_versioned_header(const T& a, const char* name) {
  if (a.struct_size != sizeof(T))
    return Status::invalid(cat(name, ".struct_size: ", a.struct_size, ", expected sizeof = ", sizeof(T),
                               " (construct the hopattn:: C++ type, or use the HOPATTN_*_ARGS_INIT macro)"));
  if (a.reserved != 0) return Status::invalid(cat(name, ".reserved: must be 0, got ", a.reserved));
  return Status();
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

// A C entry point over an extensible argument struct: reads the caller's struct
// (read_versioned_args) into the C++ type, then runs f(args) -> Status, guarded.
template <class C, typename F>
hopattn_status_t versioned_c_call(const C* args, F&& f) {
  return guarded_c_call([&] {
    VersionedArgs<C> a;
    if (Status s = read_versioned_args(args, static_cast<C*>(&a), "args"); !s.ok()) return s;
    return f(static_cast<const VersionedArgs<C>&>(a));
  });
}

}  // namespace hopattn
