// uncoalesced_global — global loads/stores that touch more 32-byte sectors
// per request than a coalesced warp access needs (ANCHORS.md: sectors per
// request, l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum /
// l1tex__t_requests_…; 4 is ideal for 4-byte accesses, 32 the worst).
// Needs the `memory` metric set. Reported when loads or stores average more
// than `max_sectors_per_request` (8: twice the 4-byte ideal, so 8-byte
// accesses do not trip it; 16-byte vector loads can, which the evidence
// notes). Saving: the excess sectors' share of all sectors, weighted by how
// memory-bound the kernel is (memory speed of light / 100; 0.5 when the SOL
// metrics were not collected).
#include "lib/analysis/rules/kernel_rule_util.h"

namespace sightline::analysis {
namespace {

using namespace kernel_rules;

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const std::vector<KernelView> views = KernelViews(ctx.model());
  const double total = TotalKernelTime(views);
  const double ideal = ctx.Param("ideal_sectors_per_request");
  size_t emitted = 0;
  for (const KernelView& v : views) {
    if (emitted >= ctx.Param("max_kernels")) break;
    if (!Eligible(ctx, v) || !v.Has(kLoadSectors) || !v.Has(kLoadRequests)) continue;
    const double ld_sec = v.Metric(kLoadSectors), ld_req = v.Metric(kLoadRequests);
    const double st_sec = v.Has(kStoreSectors) ? v.Metric(kStoreSectors) : 0;
    const double st_req = v.Has(kStoreRequests) ? v.Metric(kStoreRequests) : 0;
    const double ld_ratio = ld_req > 0 ? ld_sec / ld_req : 0;
    const double st_ratio = st_req > 0 ? st_sec / st_req : 0;
    const double limit = ctx.Param("max_sectors_per_request");
    if (ld_ratio <= limit && st_ratio <= limit) continue;
    const double sectors = ld_sec + st_sec;
    const double ld_excess = std::max(0.0, ld_sec - ideal * ld_req);
    const double st_excess = std::max(0.0, st_sec - ideal * st_req);
    const double excess = ld_excess + st_excess;
    if (sectors <= 0) continue;
    const double mem = MemorySol(v);
    const double weight = mem >= 0 ? mem / 100.0 : 0.5;
    const double fraction = excess / sectors * weight;
    Finding f = NewKernelFinding(ctx, v, fraction, total);
    // Name the access kind that wastes the most sectors (not the worst ratio).
    const bool loads_worse = ld_ratio > limit && (ld_excess >= st_excess || st_ratio <= limit);
    f.title = ShortKernelName(v.name()) + ": uncoalesced global " + (loads_worse ? "loads" : "stores") + ", " +
              std::to_string(loads_worse ? ld_ratio : st_ratio).substr(0, 4) + " sectors per request (ideal " +
              std::to_string(int(ideal)) + ")";
    f.Number("load_sectors_per_request", ld_ratio, "")
        .Number("store_sectors_per_request", st_ratio, "")
        .Number("load_sectors", ld_sec, "count")
        .Number("load_requests", ld_req, "count")
        .Number("store_sectors", st_sec, "count")
        .Number("store_requests", st_req, "count")
        .Number("excess_sector_pct", 100 * excess / sectors, "pct");
    if (mem >= 0) f.Number("memory_sol_pct", mem, "pct");
    f.recommendation =
        "Neighbouring threads should access neighbouring addresses: map threadIdx.x to the fastest-varying "
        "(contiguous) index, transpose or stage tiles through shared memory, and use structure-of-arrays "
        "layouts. (16-byte vector accesses legitimately use 16 sectors per request.)";
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(uncoalesced_global, sightline::analysis::kRuleKernel,
               "Uncoalesced global memory accesses", sightline::analysis::Run,
               {"max_sectors_per_request", 8.0, "report above this many sectors per request"},
               {"ideal_sectors_per_request", 4.0, "sectors a coalesced 4-byte warp access needs"},
               {"min_share_pct", 1.0, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
