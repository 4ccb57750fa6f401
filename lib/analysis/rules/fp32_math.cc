// fp32_math — matrix math (GEMM, convolution) in FP32 on the FMA pipes, with
// the tensor cores idle, recognised from the libraries' kernel names
// (whatif.h IsFp32MathKernelName: cuBLAS sgemm / "f32f32_f32f32", cuDNN
// implicit/direct/FFT/Winograd convolutions on float, "_ffma" xmma kernels;
// no tf32/hmma/bf16/f16/gmma marker). Needs no hardware metrics (the
// metrics-based view is tensor_core_idle). Saving: the what-if replay with
// those kernels `speedup` times faster (the device's dense BF16 tensor-core
// peak over its FP32 FMA peak: GH100 14.8, GA100 16) — bf16 autocast, the
// recommended fix; TF32 alone gains about half of that.
#include <algorithm>
#include <map>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"
#include "lib/analysis/whatif.h"

namespace sightline::analysis {
namespace {

constexpr char kTensorPipeMetric[] =
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  uint64_t kernel_ns = 0;
  std::map<uint32_t, Offender> by_name;
  for (const GpuActivity& a : model.activities) {
    if (a.kind != ActivityKind::kKernel) continue;
    kernel_ns += a.duration();
  }
  for (const KernelAggregate& k : model.kernels) {
    if (k.count == 0 || !IsFp32MathKernelName(k.name_text)) continue;
    // Measured tensor-pipe activity: tensor_core_idle's evidence is better.
    if (k.HasMetric(kTensorPipeMetric)) continue;
    Offender& o = by_name[k.name];
    o.name = k.name_text;
    o.count = k.count;
    o.total_ns = k.total_ns;
    o.detail = "FP32 on the FMA pipes";
  }
  uint64_t fp32_ns = 0;
  for (const auto& [name, o] : by_name) fp32_ns += o.total_ns;
  if (fp32_ns == 0 || PctOf(double(fp32_ns), double(kernel_ns)) < ctx.Param("min_share_pct")) {
    return;
  }
  WhatIfParams p;
  p.tensor_speedup = ctx.Param("speedup");
  const WhatIf& w = ctx.what_if(p);
  uint64_t saving = w.empty() ? 0 : w.Saving(kFixTensorCores, kFixNone, ctx.window_ns());
  if (saving == 0) {
    double s = w.tensor_speedup() > 1 ? w.tensor_speedup() : 4;
    saving = static_cast<uint64_t>(double(fp32_ns) * (1 - 1 / s));
    saving = std::min(saving, ctx.window_ns());
  }
  Finding f = ctx.NewFinding(saving);
  f.title = "Tensor cores idle: " + FormatPct(PctOf(double(fp32_ns), double(kernel_ns))) +
            " of GPU time is FP32 matrix math (GEMM/convolution) on the FMA pipes";
  f.Number("fp32_math_ns", double(fp32_ns), "ns")
      .Number("fp32_math_pct_of_gpu", PctOf(double(fp32_ns), double(kernel_ns)), "pct")
      .Number("assumed_speedup", w.tensor_speedup(), "x")
      .Text("what_if", "FP32 GEMM/convolution kernels on bf16 tensor cores (peak ratio)");
  for (auto& [name, o] : by_name) {
    o.share_pct = PctOf(double(o.total_ns), double(kernel_ns));
    f.offenders.push_back(o);
  }
  KeepTopOffenders(&f.offenders, 8);
  f.recommendation =
      "Use the tensor cores: bf16/fp16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16)), "
      "or at least TF32 (torch.backends.cuda.matmul.allow_tf32 = True, "
      "torch.backends.cudnn.allow_tf32 = True, torch.set_float32_matmul_precision(\"high\")); "
      "for convolutions also channels_last memory format.";
  out->push_back(std::move(f));
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(fp32_math, sightline::analysis::kRuleKernel,
               "FP32 GEMM/convolution kernels without tensor cores (from kernel names)",
               sightline::analysis::Run,
               {"min_share_pct", 10, "fire when such kernels take this % of GPU kernel time"},
               {"speedup", 0, "assumed tensor-core speed-up (0: from the device)"});
