// Datasheet cost model: collectives priced on the collectives table (its own tests:
// test_collectives.cpp), GEMM roofline and waves.
#include <tuple>

#include <catch2/catch.hpp>

#include "common/units.hpp"
#include "model/model_catalog.hpp"
#include "sim/cost_model.hpp"
#include "sim/reference_efficiency.hpp"
#include "sim/step_cost.hpp"
#include "sim/simulator.hpp"

using namespace trainsim;

namespace {
Hardware a100_cluster() {
  Hardware hw;
  hw.gpu = find_gpu("a100-sxm-80gb");
  hw.gpus = 64;
  hw.gpus_per_node = 8;
  hw.inter_node_gbps_per_gpu = 200;
  return hw;
}
Hardware h100_cluster(int64_t gpus) {
  Hardware hw;
  hw.gpu = find_gpu("h100-sxm-80gb");
  hw.gpus = gpus;
  hw.gpus_per_node = 8;
  hw.inter_node_gbps_per_gpu = 400;
  return hw;
}
EfficiencyConstants no_latency() {
  EfficiencyConstants c;
  c.kernel_overhead_s = 0;
  c.gemm_wave_s = 0;
  c.gemm_kernel_s = 0;
  c.collective_step_intra_s = 0;
  c.collective_step_inter_s = 0;
  return c;
}

// The host-time tests' constants: no fixed costs, 10 us to issue an op.
EfficiencyConstants issuing_10us() {
  EfficiencyConstants c = no_latency();
  c.host_dispatch_s = 10e-6;
  return c;
}

// A memory-bound op of `bytes`.
Op memory_op(double bytes) {
  Op op;
  op.kind = OpKind::kMemoryBound;
  op.bytes = bytes;
  return op;
}
}  // namespace

TEST_CASE("a ring all-reduce inside a node: NCCL's fastest protocol, Simple for large buffers") {
  const Hardware hw = a100_cluster();
  EfficiencyConstants c;
  c.kernel_overhead_s = 0;
  const DatasheetCostModel cost(hw, Precision::kBf16, c);
  const GroupScope node{8, 8, 1};
  const double busbw = hw.gpu.nvlink_bandwidth_bytes_per_s * c.nvlink_bandwidth_fraction;
  // 1 GB: Simple, 8.4 us + 14 steps x 3.4 us + 2(n-1)/n S / busbw.
  CHECK(cost.collective_s(CollectiveKind::kAllReduce, 1e9, node) == Approx(8.4e-6 + 14 * 3.4e-6 + 2.0 * 7 / 8 * 1e9 / busbw));
  // 64 KiB: LL, 6.6 us + 14 x 0.6 us, at A100's LL cap of 87.7 GB/s (half of 232 is more).
  CHECK(cost.collective_s(CollectiveKind::kAllReduce, 65536, node) == Approx(6.6e-6 + 14 * 0.6e-6 + 2.0 * 7 / 8 * 65536 / 87.7e9));
  // 4 MiB: LL128, 14 us + 14 x 1.9 us at 0.92 of the bus bandwidth.
  const double mib4 = 4.0 * 1024 * 1024;
  CHECK(cost.collective_s(CollectiveKind::kAllReduce, mib4, node) == Approx(14e-6 + 14 * 1.9e-6 + 2.0 * 7 / 8 * mib4 / (0.92 * busbw)));
  // All-gather and reduce-scatter: n - 1 steps, half the bus traffic.
  CHECK(cost.collective_s(CollectiveKind::kAllGather, 1e9, node) == Approx(8.4e-6 + 7 * 3.4e-6 + 7.0 / 8 * 1e9 / busbw));
}

TEST_CASE("across nodes the bus bandwidth is the NICs of the group's members in one node") {
  const DatasheetCostModel cost(a100_cluster(), Precision::kBf16, no_latency());
  const double nic = gbit_per_s_to_bytes_per_s(200) * no_latency().network_bandwidth_fraction;
  CHECK(cost.bus_bandwidth_bytes_per_s({8, 1, 8}) == Approx(nic));           // one member per node
  CHECK(cost.bus_bandwidth_bytes_per_s({64, 8, 8}) == Approx(8 * nic));      // whole nodes
  CHECK(cost.bus_bandwidth_bytes_per_s({8, 8, 1}) > cost.bus_bandwidth_bytes_per_s({16, 8, 2}));
}

TEST_CASE("an all-gather moves half the bus traffic of an all-reduce of the same buffer") {
  const DatasheetCostModel cost(a100_cluster(), Precision::kBf16, no_latency());
  const GroupScope scope{16, 8, 2};
  CHECK(cost.collective_s(CollectiveKind::kAllGather, 4e9, scope) ==
        Approx(0.5 * cost.collective_s(CollectiveKind::kAllReduce, 4e9, scope)));
}

TEST_CASE("large GEMMs run at the fitted fraction of peak, small ones lose to waves and memory") {
  const Hardware hw = a100_cluster();
  const EfficiencyConstants c = no_latency();
  const DatasheetCostModel cost(hw, Precision::kBf16, c);
  // 108 SMs: 8192 x 13824 has 64 x 108 tiles of 128x128, exactly 64 full waves.
  const double big = cost.gemm_s(8192, 13824, 8192, 1);
  CHECK(2.0 * 8192 * 13824 * 8192 / big == Approx(hw.gpu.peak_bf16_flops_per_s * c.gemm_peak_fraction));
  // 108 output tiles fill one wave; 117 need a second (compute-bound shapes: K is long).
  const double one_wave = cost.gemm_s(128 * 12, 128 * 9, 8192, 1);
  const double two_waves = cost.gemm_s(128 * 13, 128 * 9, 8192, 1);
  CHECK(two_waves == Approx(2.0 * one_wave).epsilon(0.01));
  // A skinny GEMM is bound by memory bandwidth.
  const double skinny = cost.gemm_s(1 << 20, 8, 8, 1);
  CHECK(skinny == Approx((double(1 << 20) * 8 * 2 + 64) * 2 /
                         (hw.gpu.memory_bandwidth_bytes_per_s * c.memory_bandwidth_fraction)));
}

TEST_CASE("each wave of a GEMM pays its fill and epilogue, each kernel its ramp: a short k runs slower") {
  const Hardware hw = a100_cluster();
  EfficiencyConstants c = no_latency();
  c.gemm_wave_s = 1.2e-6;
  c.gemm_kernel_s = 4.5e-6;
  const DatasheetCostModel cost(hw, Precision::kBf16, c), plain(hw, Precision::kBf16, no_latency());
  // 8192 x 13824: 64 full waves on 108 SMs, whatever k is.
  CHECK(cost.gemm_s(8192, 13824, 8192, 1) == Approx(plain.gemm_s(8192, 13824, 8192, 1) + 64 * 1.2e-6 + 4.5e-6));
  // The same 64 waves cost as much at k 256 as at k 8192: the short GEMM loses a larger share.
  const double long_rate = 8192.0 / cost.gemm_s(8192, 13824, 8192, 1), short_rate = 256.0 / cost.gemm_s(8192, 13824, 256, 1);
  CHECK(short_rate < 0.85 * long_rate);
  CHECK(short_rate > 0.6 * long_rate);
  // Memory-bound shapes keep the kernel's fixed cost only.
  CHECK(cost.gemm_s(1 << 20, 8, 8, 1) == Approx(plain.gemm_s(1 << 20, 8, 8, 1) + 4.5e-6));
}

TEST_CASE("the device idles while the host issues ops that run faster than they are issued") {
  const Hardware hw = a100_cluster();
  EfficiencyConstants c = no_latency();
  c.host_dispatch_s = 10e-6;
  const DatasheetCostModel cost(hw, Precision::kBf16, c);
  const GroupScope tp{1, 1, 1};
  Op tiny;
  tiny.kind = OpKind::kMemoryBound;
  tiny.bytes = 1e3;  // ~1 ns on the device
  const StepCost small = price_ops(std::vector<Op>(100, tiny), cost, tp);
  CHECK(small.total() == Approx(100 * 10e-6));  // host-bound: 100 issues of 10 us
  CHECK(small.host_idle_s == Approx(100 * 10e-6 - small.compute_s));
  Op big = tiny;
  big.bytes = 1e10;  // ~10 ms on the device
  const StepCost large = price_ops(std::vector<Op>(100, big), cost, tp);
  CHECK(large.host_idle_s == 0.0);  // device-bound: the host runs ahead
  c.host_dispatch_s = 0;
  const DatasheetCostModel no_host(hw, Precision::kBf16, c);
  CHECK(price_ops(std::vector<Op>(100, tiny), no_host, tp).host_idle_s == 0.0);
}

TEST_CASE("after a host synchronisation the device waits for the host to issue again: no lead carries past it") {
  const DatasheetCostModel cost(a100_cluster(), Precision::kBf16, issuing_10us());
  const GroupScope tp{1, 1, 1};
  const Op tiny = memory_op(1e3);  // ~1 ns
  const Op big = memory_op(1e9);   // ~1 ms: the host issues it long before it ends
  const double big_s = price_ops({big}, cost, tp).compute_s, tiny_s = price_ops({tiny}, cost, tp).compute_s;
  // Device-bound, no sync: the host's 10 us per op hide behind the device's work.
  std::vector<Op> ops = {big, tiny, big, tiny};
  CHECK(price_ops(ops, cost, tp).host_idle_s == 0.0);
  // A sync before the second big op: the host waits for the device to drain, then issues that op
  // (10 us) while the device idles; the tiny op after it is issued while the big one runs.
  ops[2].host_sync = true;
  const StepCost synced = price_ops(ops, cost, tp);
  CHECK(synced.host_idle_s == Approx(10e-6));
  CHECK(synced.total() == Approx(2 * big_s + 2 * tiny_s + 10e-6));
  // Fifty small ops between syncs: the host issues them (500 us) while the big op runs (1 ms), so
  // in the repeating list only the sync's 10 us show. Without the big op they are host-bound.
  std::vector<Op> host_bound(50, tiny);
  host_bound.push_back(big);
  host_bound.back().host_sync = true;
  CHECK(price_ops(host_bound, cost, tp).host_idle_s == Approx(10e-6));
  host_bound.back() = tiny;
  host_bound.back().host_sync = true;
  CHECK(price_ops(host_bound, cost, tp).host_idle_s == Approx(51 * 10e-6 - 51 * tiny_s));
}

TEST_CASE("Megatron's pipeline without interleaving synchronises the host at every step: its first layer's issue shows") {
  const DatasheetCostModel cost(a100_cluster(), Precision::kBf16, issuing_10us());
  const LayerScopes scopes{GroupScope{1, 1, 1}};
  const Op big = memory_op(1e9);  // ~1 ms, issued in 10 us: device-bound
  IterationWork w;
  w.layer.forward = std::vector<Op>(4, big);
  w.layer.backward = std::vector<Op>(6, big);
  StageWork stage;
  stage.layers = 3;
  stage.chunk_layers = {3};
  stage.chunk_recomputed_layers = {0};
  w.stages.push_back(stage);
  const std::vector<StepCost> free_running = price_steps(w, 1, cost, scopes);
  CHECK(free_running[0].host_idle_s == 0.0);
  CHECK(free_running[1].host_idle_s == 0.0);
  w.step_host_sync = true;
  const std::vector<StepCost> synced = price_steps(w, 1, cost, scopes);
  CHECK(synced[0].host_idle_s == Approx(10e-6));  // once per step, not per layer
  CHECK(synced[1].host_idle_s == Approx(10e-6));
  // Set by the lowering for Megatron's 1F1B only: not interleaved, not another stack's.
  const ModelSpec m = resolve_model("llama3-8b");
  ParallelPlan p;
  p.pp = 2;
  p.global_batch = 8;
  p.host_stack = HostStack::kTransformerEngine;
  CHECK(lower_iteration(m, p).step_host_sync);
  p.vpp = 2;
  p.schedule = Schedule::kInterleaved;
  CHECK_FALSE(lower_iteration(m, p).step_host_sync);
  p.vpp = 1;
  p.schedule = Schedule::k1F1B;
  p.host_stack = HostStack::kPytorch;
  CHECK_FALSE(lower_iteration(m, p).step_host_sync);
}

TEST_CASE("Transformer Engine's stack issues each op at the trace's host cost and each expert GEMM apart, a CUDA graph issues none") {
  const Hardware hw = a100_cluster();
  const DatasheetCostModel cost(hw, Precision::kBf16, default_efficiency_constants());
  const HostCost torch = host_cost(cost, HostStack::kPytorch, 0);
  const HostCost te = host_cost(cost, HostStack::kTransformerEngine, 0);
  CHECK(torch.per_op_s == Approx(72.3e-6));
  CHECK(torch.per_expert_launch_s == 0.0);
  CHECK(te.per_op_s == Approx(42.48e-3 / 324.0));  // 131 us: the DeepSeek-V3 H800 trace
  CHECK(te.per_expert_launch_s == Approx(0.267e-3 / 8.0));  // 33 us: TransformerEngine#3134
  Op grouped;
  grouped.kind = OpKind::kGemm;
  grouped.graph_scope = kGraphMoe;
  grouped.expert_launches = 16;
  CHECK(op_host_s(grouped, te) == Approx(te.per_op_s + 16 * te.per_expert_launch_s));
  CHECK(op_host_s(grouped, host_cost(cost, HostStack::kTransformerEngine, kGraphAttn)) > 0.0);  // another block's graph
  for (const CudaGraphs g : {CudaGraphs{kGraphMoe}, CudaGraphs{kGraphLayer}, CudaGraphs{kGraphFullIteration}}) {
    CHECK(op_host_s(grouped, host_cost(cost, HostStack::kTransformerEngine, g)) == 0.0);
  }
  Op head;  // outside every layer: only a full-iteration graph captures it
  head.graph_scope = 0;
  CHECK(op_host_s(head, host_cost(cost, HostStack::kTransformerEngine, kGraphLayer)) == Approx(te.per_op_s));
  CHECK(op_host_s(head, host_cost(cost, HostStack::kTransformerEngine, kGraphFullIteration)) == 0.0);
  // A measured profile's op times hold their issue cost: no host time at all.
  EfficiencyConstants none = default_efficiency_constants();
  none.host_dispatch_s = 0;
  CHECK(host_cost(DatasheetCostModel(hw, Precision::kBf16, none), HostStack::kTransformerEngine, 0).per_op_s == 0.0);
}

TEST_CASE("a Python loop's eager ops cost the host per aten call forward and per autograd node backward") {
  const Hardware hw = a100_cluster();
  const DatasheetCostModel cost(hw, Precision::kBf16, default_efficiency_constants());
  const HostCost te = host_cost(cost, HostStack::kTransformerEngine, 0);
  CHECK(te.per_eager_op_s == Approx((8.50e-6 + 8.97e-6) / 2));  // aten::mul, aten::add on an H100 host
  CHECK(te.per_autograd_node_s == Approx(24.5e-6));               // MulBackward0 on an A100 host
  Op loop;
  loop.kind = OpKind::kMemoryBound;
  loop.graph_scope = kGraphMoe;
  loop.eager_ops = 36;
  CHECK(op_host_s(loop, te) == Approx(te.per_op_s + 36 * te.per_eager_op_s));
  loop.backward = true;
  CHECK(op_host_s(loop, te) == Approx(te.per_op_s + 36 * te.per_autograd_node_s));
  CHECK(op_host_s(loop, host_cost(cost, HostStack::kTransformerEngine, kGraphMoe)) == 0.0);  // captured
  EfficiencyConstants none = default_efficiency_constants();
  none.host_dispatch_s = 0;  // a measured profile: no host time
  CHECK(host_cost(DatasheetCostModel(hw, Precision::kBf16, none), HostStack::kTransformerEngine, 0).per_eager_op_s == 0.0);
}

TEST_CASE("a small-expert MoE layer under Transformer Engine waits on the host, graphs of its layers take the wait away") {
  const ModelSpec m = resolve_model("qwen3-30b-a3b");
  const Hardware hw = h100_cluster(8);
  ParallelPlan p;
  p.dp = 8;
  p.ep = 8;
  p.global_batch = 64;
  p.precision = Precision::kFp8;
  const DatasheetCostModel cost(hw, p.precision, default_efficiency_constants());
  const auto idle = [&](HostStack stack, CudaGraphs graphs) {
    ParallelPlan q = p;
    q.host_stack = stack;
    q.cuda_graphs = graphs;
    return predict_iteration(m, q, hw, cost);
  };
  const Prediction te = idle(HostStack::kTransformerEngine, 0);
  CHECK(te.breakdown.host_idle_s > 0.1 * te.iteration_time_s);  // 16 local experts, 4096 tokens each micro-batch
  CHECK(te.breakdown.host_idle_s <= te.breakdown.compute_s);
  const Prediction torch = idle(HostStack::kPytorch, 0);
  CHECK(torch.breakdown.host_idle_s < te.breakdown.host_idle_s);
  const Prediction router = idle(HostStack::kTransformerEngine, kGraphMoeRouter | kGraphMoePreprocess);
  CHECK(router.breakdown.host_idle_s < te.breakdown.host_idle_s);
  CHECK(router.breakdown.host_idle_s > 0.0);
  const Prediction layers = idle(HostStack::kTransformerEngine, kGraphLayer);
  CHECK(layers.breakdown.host_idle_s < 0.01 * te.breakdown.host_idle_s);  // the embedding and the head stay eager
  CHECK(layers.iteration_time_s < te.iteration_time_s);
}

TEST_CASE("context parallelism: a ring of cp - 1 K,V blocks beside attention, which does 1/cp of the work") {
  const ModelSpec m = resolve_model("llama3-8b");  // kv 1024 wide, seq 8192
  ParallelPlan p;
  p.cp = 4;
  p.global_batch = 1;
  const IterationWork w = lower_iteration(m, p);
  const Op* attention = nullptr;
  const Op* ring = nullptr;
  for (const Op& op : w.layer.forward) {
    if (std::string(op.name) == "attention") attention = &op;
    if (std::string(op.name) == "cp_ring_kv") ring = &op;
  }
  REQUIRE(attention != nullptr);
  REQUIRE(ring != nullptr);
  const double tokens = 8192.0 / 4;
  CHECK(ring->bytes == Approx(3 * 2 * tokens * 1024 * 2));  // (cp - 1) steps of K and V, bf16
  CHECK(ring->group == GroupKind::kCp);
  CHECK(&w.layer.forward[static_cast<size_t>(ring->overlaps_op)] == attention);
  ParallelPlan one = p;
  one.cp = 1;
  const IterationWork w1 = lower_iteration(m, one);
  for (const Op& op : w1.layer.forward) {
    if (std::string(op.name) == "attention") CHECK(attention->flops() == Approx(op.flops() / 4));
    if (std::string(op.name) == "qkv") CHECK(op.m == 4 * static_cast<int64_t>(tokens));  // GEMMs on the rank's tokens
  }
  // The backward passes K, V and their gradients: twice the bytes.
  for (const Op& op : w.layer.backward) {
    if (std::string(op.name) == "cp_ring_kv_bwd") CHECK(op.bytes == Approx(2 * ring->bytes));
  }
}

TEST_CASE("an all-to-all across nodes goes through each rank's own NIC, not the node's ring bandwidth") {
  const DatasheetCostModel cost(a100_cluster(), Precision::kBf16, no_latency());
  const double nic = gbit_per_s_to_bytes_per_s(200) * EfficiencyConstants{}.alltoall_network_fraction;
  const GroupScope two_nodes{16, 8, 2};
  const double bytes = 128e6;
  // Half of every rank's buffer is for the other node: 8/16 of it over one NIC.
  CHECK(cost.collective_s(CollectiveKind::kAllToAll, bytes, two_nodes) == Approx(bytes * 8.0 / 16.0 / nic));
  // busbw = algbw (n - 1) / n: about twice one NIC on two nodes (nccl-tests #267).
  const double busbw = bytes / cost.collective_s(CollectiveKind::kAllToAll, bytes, two_nodes) * 15.0 / 16.0;
  CHECK(busbw == Approx(1.875 * nic));
  // A ring all-gather of the same buffer is far cheaper: its node crossings use every NIC.
  CHECK(cost.collective_s(CollectiveKind::kAllGather, bytes, two_nodes) < 0.3 * cost.collective_s(CollectiveKind::kAllToAll, bytes, two_nodes));
}

TEST_CASE("NCCL's all-to-all across 4 nodes lands on NVIDIA's nccl-tests figure, DeepEP's exchange keeps the NIC's rate") {
  // nccl-tests AlltoAll on 32 GPUs of DGX H100 (8 x 400 Gb/s): busbw 48 GB/s (GTC25 S72583,
  // shared/reference/microbench.json), and 24 GB/s on DGX A100 (8 x 200 Gb/s).
  for (const auto& [gpu, gbps, measured] : {std::tuple{"h100-sxm-80gb", 400.0, 48e9}, std::tuple{"a100-sxm-80gb", 200.0, 24e9}}) {
    const DatasheetCostModel cost(Hardware{find_gpu(gpu), 32, 8, gbps}, Precision::kBf16, no_latency());
    const GroupScope four_nodes{32, 8, 4};
    const double bytes = 1e9;
    const double busbw = bytes / cost.collective_s(CollectiveKind::kAllToAll, bytes, four_nodes) * 31.0 / 32.0;
    CHECK(busbw == Approx(measured).epsilon(0.01));
    // The same bytes over one rank per node, as the flex dispatcher's RDMA hop: the NIC at
    // network_bandwidth_fraction.
    const GroupScope rail{4, 1, 4};
    const double rdma = gbit_per_s_to_bytes_per_s(gbps) * no_latency().network_bandwidth_fraction;
    CHECK(cost.device_initiated_alltoall_s(bytes, rail) == Approx(bytes * 3.0 / 4.0 / rdma));
    CHECK(cost.device_initiated_alltoall_s(bytes, rail) < cost.collective_s(CollectiveKind::kAllToAll, bytes, rail));
  }
}

TEST_CASE("context parallelism's K,V all-gather (Llama 3) and Ulysses' all-to-alls: their bytes, the same attention work") {
  const ModelSpec m = resolve_model("llama3-8b");  // 32 heads, 8 KV heads of 128, seq 8192
  ParallelPlan p;
  p.cp = 4;
  p.global_batch = 1;
  const auto op_named = [](const std::vector<Op>& ops, const char* name) -> const Op* {
    for (const Op& op : ops) {
      if (std::string(op.name) == name) return &op;
    }
    return nullptr;
  };
  const double tokens = 8192.0 / 4;
  const double ring_flops = op_named(lower_iteration(m, p).layer.forward, "attention")->flops();
  p.cp_comm = CpComm::kAllGather;
  LayerWork w = lower_iteration(m, p).layer;
  REQUIRE(op_named(w.forward, "cp_allgather_kv") != nullptr);
  CHECK(op_named(w.forward, "cp_allgather_kv")->bytes == Approx(4 * 2 * tokens * 1024 * 2));  // every rank's K and V
  CHECK(op_named(w.backward, "cp_reducescatter_dkv")->collective == CollectiveKind::kReduceScatter);
  CHECK(op_named(w.forward, "cp_ring_kv") == nullptr);
  CHECK(op_named(w.forward, "attention")->flops() == Approx(ring_flops));
  p.cp_comm = CpComm::kA2a;  // 8 KV heads over cp 4: 2 each
  REQUIRE(validate_plan(p, m, "test").empty());
  w = lower_iteration(m, p).layer;
  CHECK(op_named(w.forward, "cp_a2a_qkv")->bytes == Approx(tokens * (4096 + 2 * 1024) * 2));
  CHECK(op_named(w.forward, "cp_a2a_out")->bytes == Approx(tokens * 4096 * 2));
  CHECK(op_named(w.forward, "cp_a2a_qkv")->collective == CollectiveKind::kAllToAll);
  CHECK(op_named(w.backward, "cp_a2a_qkv_bwd") != nullptr);
  CHECK(op_named(w.forward, "attention")->flops() == Approx(ring_flops));  // heads / cp over the whole sequence
  p.cp = 16;  // 8 KV heads do not split 16 ways
  p.global_batch = 1;
  CHECK_THAT(validate_plan(p, m, "test").items()[0], Catch::Contains("a2a (Ulysses)"));
}

TEST_CASE("attention's forward and backward kernels run at their own measured rates, the pair's time kept") {
  // The H100 takes the H200's cuDNN measurement: forward 538, backward 494, together 506 TFLOP/s.
  const ReferenceEfficiency r = reference_efficiency(find_gpu("h100-sxm-80gb"), Precision::kBf16);
  const double pair = 3.5 / (1.0 / 538 + 2.5 / 494);
  CHECK(r.attention_forward == Approx(538 / pair));
  CHECK(r.attention_backward == Approx(494 / pair));
  // Every GPU's split keeps the time of a forward and its backward (2.5x the FLOPs) at the pair's rate.
  for (const char* gpu : {"a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "b200-sxm-180gb", "gb200-nvl72", "b300-sxm-288gb",
                          "gb300-nvl72", "mi300x-oam-192gb"}) {
    for (const bool flash2 : {false, true}) {
      INFO(gpu << (flash2 ? " FlashAttention-2" : " cuDNN"));
      const ReferenceEfficiency e = reference_efficiency(find_gpu(gpu), Precision::kBf16, flash2);
      CHECK(1.0 / e.attention_forward + 2.5 / e.attention_backward == Approx(3.5));
      CHECK(e.attention_forward >= e.attention_backward);  // no record has a backward faster than its forward
    }
  }
  // The cost model: one causal 4k attention op, forward and backward, priced at those rates.
  EfficiencyConstants c = no_latency();
  const DatasheetCostModel cost(h100_cluster(8), Precision::kBf16, c);
  const GroupScope one{1, 1, 1};
  Op forward;
  forward.kind = OpKind::kAttention;
  forward.attention_batch_heads = 32;
  forward.attention_seq = 4096;
  forward.attention_head_dim = 128;
  Op backward = forward;
  backward.backward = true;
  const double rate = [&] {
    const double t = cost.op_s(forward, one);
    return forward.flops() / t;
  }();
  CHECK(backward.flops() / cost.op_s(backward, one) == Approx(rate * 494 / 538));
  CHECK(cost.op_s(forward, one) + cost.op_s(backward, one) == Approx((forward.flops() + backward.flops()) / (rate / (538 / pair))));
}
