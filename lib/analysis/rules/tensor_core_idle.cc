// tensor_core_idle — a GEMM-like kernel (name contains gemm, matmul, conv,
// mma, cutlass, cublas, xmma, …; case-insensitive) whose tensor pipe is
// (almost) never active (sm__pipe_tensor_op_hmma_cycles_active % of peak <
// `max_tensor_pct`, 5%; ANCHORS.md). Needs the `compute` set. Saving
// (heuristic): matrix math moved to tensor cores runs several times faster
// than on the FMA pipes, so the SM-bound share of the time, SM SOL / 100
// (capped at 80%), is what the move can remove.
#include <cctype>

#include "lib/analysis/rules/kernel_rule_util.h"

namespace sightline::analysis {
namespace {

using namespace kernel_rules;

bool GemmLike(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* key : {"gemm", "matmul", "conv", "mma", "cutlass", "cublas", "xmma", "gemv", "bmm",
                          "linear", "dot_product"}) {
    if (lower.find(key) != std::string::npos) return true;
  }
  return false;
}

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const std::vector<KernelView> views = KernelViews(ctx.model());
  const double total = TotalKernelTime(views);
  size_t emitted = 0;
  for (const KernelView& v : views) {
    if (emitted >= ctx.Param("max_kernels")) break;
    if (!Eligible(ctx, v) || !v.Has(kTensorActive) || !GemmLike(v.name())) continue;
    const double tensor = v.Metric(kTensorActive);
    if (tensor >= ctx.Param("max_tensor_pct")) continue;
    const double sm = v.Metric(kSmThroughput);
    const double fraction = std::min(0.8, sm >= 0 ? sm / 100.0 : 0.5);
    Finding f = NewKernelFinding(ctx, v, fraction, total);
    f.title = ShortKernelName(v.name()) + ": GEMM-like kernel with tensor cores idle (" + Pct(tensor) +
              " tensor-pipe activity, SM " + Pct(sm) + ")";
    f.Number("tensor_pipe_active_pct", tensor, "pct");
    if (sm >= 0) f.Number("sm_sol_pct", sm, "pct");
    f.recommendation =
        "Matrix math runs on the FMA pipes. Use tensor cores: cuBLAS/cuBLASLt or CUTLASS GEMMs, "
        "TF32 for FP32 inputs (torch.backends.cuda.matmul.allow_tf32 = True, "
        "cublasSetMathMode(CUBLAS_TF32_TENSOR_OP_MATH)), BF16/FP16 with mixed precision, or WMMA/MMA "
        "(wgmma on Hopper) in custom kernels.";
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(tensor_core_idle, sightline::analysis::kRuleKernel,
               "Tensor cores idle in a GEMM-like kernel", sightline::analysis::Run,
               {"max_tensor_pct", 5.0, "report below this tensor-pipe activity"},
               {"min_share_pct", 1.0, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
