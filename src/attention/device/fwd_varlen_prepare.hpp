// The variable-length forward's prepare kernel (fwd_varlen_prepare.cu): checks the lengths in
// device memory and writes the tile list into fp.workspace for a row of block_m x block_n tiles.
#pragma once

#include "attention/fwd_params.hpp"
#include "hopattn/hopattn.hpp"

namespace hopattn::attention {

Status launch_fwd_varlen_prepare(const FwdParams& fp, int block_m, int block_n, Stream stream);
// A KV-cache call's list (fp.cache_seqlens; fwd_varlen.hpp, "KV-cache lists") into fp.workspace,
// with the lengths checked and bad sequences' rows written NaN, for a row of block_m-row Q tiles.
Status launch_fwd_kvcache_prepare(const FwdParams& fp, int block_m, int block_n, Stream stream);

}  // namespace hopattn::attention
