// lib/collect/nccl_names.cc — see nccl_names.h.
#include "lib/collect/nccl_names.h"

#include <cstdint>
#include <vector>

namespace sightline::collect {
namespace {

struct OpName {
  std::string_view name;
  NcclOp op;
};
// Longest names first so "ReduceScatter" wins over "Reduce".
constexpr OpName kOps[] = {
    {"ReduceScatter", NcclOp::kReduceScatter}, {"AllReduce", NcclOp::kAllReduce},
    {"AllGather", NcclOp::kAllGather},         {"AllToAll", NcclOp::kAllToAll},
    {"Alltoall", NcclOp::kAllToAll},           {"Broadcast", NcclOp::kBroadcast},
    {"SendRecv", NcclOp::kSendRecv},           {"Reduce", NcclOp::kReduce},
    {"Send", NcclOp::kSend},                   {"Recv", NcclOp::kRecv},
    {"Bcast", NcclOp::kBroadcast},
};

NcclOp OpFromToken(std::string_view token) {
  for (const OpName& o : kOps) {
    if (token == o.name) return o.op;
  }
  return NcclOp::kUnknown;
}

std::vector<std::string_view> SplitUnderscore(std::string_view s) {
  std::vector<std::string_view> out;
  size_t begin = 0;
  while (begin <= s.size()) {
    size_t end = s.find('_', begin);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

bool IsReduction(std::string_view t) {
  return t == "Sum" || t == "Prod" || t == "Max" || t == "Min" || t == "Avg" ||
         t == "PreMulSum" || t == "SumPostDiv";
}

bool IsAlgorithm(std::string_view t) {
  return t == "RING" || t == "TREE" || t == "COLLNET" || t == "COLLNET_DIRECT" ||
         t == "COLLNET_CHAIN" || t == "NVLS" || t == "NVLS_TREE" || t == "PAT";
}

bool IsProtocol(std::string_view t) { return t == "LL" || t == "LL128" || t == "SIMPLE"; }

}  // namespace

uint32_t NcclDatatypeBytes(std::string_view t) {
  if (t == "i8" || t == "u8" || t == "int8_t" || t == "uint8_t" || t == "f8e4m3" ||
      t == "f8e5m2" || t == "char") {
    return 1;
  }
  if (t == "f16" || t == "bf16" || t == "half" || t == "__nv_bfloat16") return 2;
  if (t == "f32" || t == "i32" || t == "u32" || t == "float" || t == "int32_t" ||
      t == "uint32_t" || t == "int") {
    return 4;
  }
  if (t == "f64" || t == "i64" || t == "u64" || t == "double" || t == "int64_t" ||
      t == "uint64_t") {
    return 8;
  }
  return 0;
}

bool ParseNcclKernelName(std::string_view name, NcclKernelInfo* info) {
  // CUPTI reports mangled names: "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24nccl...".
  if (name.rfind("_Z", 0) == 0) {
    size_t i = 2, len = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') {
      len = len * 10 + static_cast<size_t>(name[i] - '0');
      ++i;
    }
    if (len == 0 || i + len > name.size()) return false;
    name = name.substr(i, len);
  }
  std::string_view rest;
  if (name.rfind("ncclDevKernel_", 0) == 0) {
    rest = name.substr(14);
  } else if (name.rfind("ncclKernel_", 0) == 0) {
    rest = name.substr(11);
  } else if (name.rfind("ncclDevKernelDebug_", 0) == 0) {
    rest = name.substr(19);
  } else {
    return false;
  }
  size_t paren = rest.find('(');
  if (paren != std::string_view::npos) rest = rest.substr(0, paren);
  *info = NcclKernelInfo{};
  std::vector<std::string_view> tokens = SplitUnderscore(rest);
  if (tokens.empty()) return true;
  info->op = OpFromToken(tokens[0]);
  // Legacy names end in a C type that itself contains '_' ("int8_t").
  if (tokens.size() >= 3) {
    std::string tail = std::string(tokens[tokens.size() - 2]) + "_" +
                       std::string(tokens[tokens.size() - 1]);
    if (NcclDatatypeBytes(tail) > 0) {
      info->datatype = tail;
      tokens.resize(tokens.size() - 2);
    }
  }
  for (size_t i = 1; i < tokens.size(); ++i) {
    std::string_view t = tokens[i];
    if (IsReduction(t)) {
      info->reduction = std::string(t);
    } else if (IsAlgorithm(t)) {
      if (!info->algorithm.empty()) info->algorithm += "_";
      info->algorithm += std::string(t);
    } else if (IsProtocol(t)) {
      if (!info->algorithm.empty()) info->algorithm += "_";
      info->algorithm += std::string(t);
    } else if (NcclDatatypeBytes(t) > 0) {
      info->datatype = std::string(t);
    }
  }
  return true;
}

bool ParseNcclApiName(std::string_view name, NcclOp* op) {
  if (name.rfind("nccl", 0) != 0) return false;
  std::string_view rest = name.substr(4);
  size_t paren = rest.find('(');
  if (paren != std::string_view::npos) rest = rest.substr(0, paren);
  NcclOp parsed = OpFromToken(rest);
  if (parsed == NcclOp::kUnknown) return false;
  *op = parsed;
  return true;
}

}  // namespace sightline::collect
