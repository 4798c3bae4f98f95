/* hopattn — the CuTe layout-algebra checker (`hopattn layout`) as a call.
 *
 * EXPR is a layout or an operation on layouts in CuTe notation, as the CLI takes it, e.g.
 *   "(4,8):(8,1)", "complement((2,4):(1,8), 64)", "composition((6,2):(8,2), (4,3):(3,1))",
 *   "logical_divide((8,8):(8,1), 4:1)". `hopattn layout --help` lists the operations.
 * The report says whether the sufficient conditions of "A Note on the Algebra of CuTe Layouts"
 * hold (and which fails, and why), prints the result with its value table and the brute-force
 * truth, and with `check` also CuTe's own answer (CUTLASS 4.2, compiled into the library).
 *
 * Returns 0 when the conditions hold, 1 when one fails, 2 for a malformed expression or one
 * beyond the checker's limits (the error, with the column, is the report), -1 for a NULL expr
 * or a NULL buf with cap > 0. The report is written to buf, NUL-terminated and truncated to
 * cap - 1 characters; *needed (when not NULL) is the size the whole report takes, NUL included:
 * call with cap 0 to size the buffer. Host only; thread-safe. */
#ifndef HOPATTN_LAYOUT_H
#define HOPATTN_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int32_t hopattn_layout_report(const char* expr, int32_t check, char* buf, size_t cap, size_t* needed);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOPATTN_LAYOUT_H */
