// The packed Q load's descriptor (fwd_packed_q_encode.hpp).
#include "attention/device/fwd_packed_q_encode.hpp"

#include <string>

#include "cutlass/cuda_host_adapter.hpp"

namespace hopattn::attention {

Status encode_packed_q_load(const PackedQLoad& load, hopattn_dtype_t dtype, CUtensorMap* desc) {
  CUtensorMapDataType format;
  if (dtype == HOPATTN_DTYPE_BF16) format = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  else if (dtype == HOPATTN_DTYPE_FP16) format = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  else return Status::unsupported(std::string("packed q load (PackGQA): q dtype ") + std::to_string(int(dtype)) +
                                  " is not bf16 or fp16");
  if (load.element_bytes != 2 || load.base == nullptr)
    return Status::invalid("packed q load (PackGQA): q is null or not 16-bit (make_packed_q_load was not called)");
  cuuint64_t dims[4], strides[3];
  cuuint32_t box[4], element_strides[4] = {1, 1, 1, 1};
  for (int i = 0; i < 4; ++i) dims[i] = load.dims[i], box[i] = load.box[i];
  for (int i = 0; i < 3; ++i) strides[i] = load.strides[i];
  const CUresult result = cutlass::call_cuTensorMapEncodeTiled(
      desc, format, 4, const_cast<void*>(load.base), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result == CUDA_SUCCESS) return Status();
  std::string what = "packed q load (PackGQA): cuTensorMapEncodeTiled returned " + std::to_string(int(result)) +
                     " for q dims (hdim, heads_q, seqlen_q, batch) = (";
  for (int i = 0; i < 4; ++i) what += std::to_string(load.dims[i]) + (i < 3 ? ", " : ")");
  what += ", byte strides (head, seq, batch) = (";
  for (int i = 0; i < 3; ++i) what += std::to_string(load.strides[i]) + (i < 2 ? ", " : ")");
  what += ", box (64, g, P, 1) = (";
  for (int i = 0; i < 4; ++i) what += std::to_string(load.box[i]) + (i < 3 ? ", " : ")");
  return Status::cuda(what);
}

}  // namespace hopattn::attention
