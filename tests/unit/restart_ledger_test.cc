// gnn-launch's ledger of a job's progress across restarts, fed with the
// trainers' reports as the supervisor parses them; and failover's
// reassignment of partitions to the machines left.
#include "cluster/restart_ledger.h"

#include <catch2/catch.hpp>
#include <set>
#include <vector>

#include "cluster/failover.h"

namespace gnn {
namespace {

using Clock = RestartLedger::Clock;

Proc Trainer(int64_t resumed, int64_t step, int64_t checkpoint, Clock::time_point first_step = {}) {
  Proc p;
  p.role = "trainer";
  p.resumed_step = resumed;
  p.step = step;
  p.checkpoint_step = checkpoint;
  if (checkpoint >= 0) p.checkpoint_path = "/ws/ck/checkpoint.pt";
  p.first_step_at = first_step;
  return p;
}

}  // namespace

TEST_CASE("restart ledger: steps replayed and recovery over runs, one that never trained",
          "[unit]") {
  RestartLedger ledger;
  const Clock::time_point t0 = Clock::now();
  // Run 0: two trainers reach step 100 and 99; rank 0 checkpointed at 50.
  Proc a = Trainer(-1, 100, 50, t0), b = Trainer(-1, 99, -1, t0);
  ledger.EndRun(0, {&a, &b}, t0 + std::chrono::seconds(10));
  CHECK(ledger.high_water() == 100);
  CHECK(ledger.checkpoint_step() == 50);
  CHECK(ledger.ResumeText(true, true) ==
        "resuming from /ws/ck/checkpoint.pt (step 50), 50 steps to replay");
  // Run 1 fails before any trainer trained (servers never came up).
  ledger.EndRun(1, {}, t0 + std::chrono::seconds(20));
  CHECK(ledger.ResumeText(true, true) ==
        "resuming from /ws/ck/checkpoint.pt (step 50), 50 steps to replay");
  // Run 2 resumes at 50, is training 3 s after run 1's failure, finishes.
  Proc c = Trainer(50, 200, 150, t0 + std::chrono::seconds(23));
  ledger.EndRun(2, {&c}, t0 + std::chrono::seconds(60));
  nlohmann::json summary;
  ledger.AddTo(2, &summary);
  CHECK(summary.at("restarts") == 2);
  CHECK(summary.at("steps_replayed") == 50);  // steps 51..100 ran twice
  REQUIRE(summary.at("recovery_s").size() == 2);
  CHECK(summary.at("recovery_s")[0].is_null());
  CHECK(summary.at("recovery_s")[1].get<double>() == Approx(3.0));
}

TEST_CASE("restart ledger: no checkpoint, a lost one, and what other nodes say", "[unit]") {
  RestartLedger ledger;
  Proc a = Trainer(-1, 30, -1);
  ledger.EndRun(0, {&a}, Clock::now());
  CHECK(ledger.ResumeText(true, false) ==
        "no checkpoint yet (no --checkpoint_dir; training starts again), 30 steps lost");
  CHECK(ledger.ResumeText(false, true) == "rank 0 resumes from the newest checkpoint on machine 0");
  Proc b = Trainer(0, 80, 60);
  ledger.EndRun(1, {&b}, Clock::now());
  CHECK(ledger.checkpoint_step() == 60);
  ledger.ForgetCheckpoint();
  CHECK(ledger.checkpoint_step() == -1);
  CHECK(ledger.ResumeText(true, true) ==
        "no checkpoint yet (training starts again), 80 steps lost");
  nlohmann::json summary;
  ledger.AddTo(1, &summary);
  CHECK(summary.at("steps_replayed") == 30);  // run 1 started over: steps 1..30 again
}

TEST_CASE("Reassign keeps survivors on partitions they hold and fills the rest in order",
          "[unit]") {
  // Four machines, two partitions: machine m holds partition m mod 2.
  const std::vector<std::set<int>> holds = {{0}, {1}, {0}, {1}};
  CHECK(Reassign({0, 1, 2, 3}, holds, 2) == std::vector<int>({0, 1, 2, 3}));  // unchanged
  // Machine 1 lost: slot 1 (partition 1) goes to machine 3, which holds it;
  // slot 2 (partition 0) to machine 2: nothing is copied.
  CHECK(Reassign({0, 2, 3}, holds, 2) == std::vector<int>({0, 3, 2}));
  // Machines 1 and 3 lost: partition 1 has no holder left; machine 2 takes
  // it (a copy), machine 0 keeps partition 0.
  CHECK(Reassign({0, 2}, holds, 2) == std::vector<int>({0, 2}));
  CHECK_THROWS_WITH(Reassign({3}, holds, 2), Catch::Contains("1 machine is left for 2 partitions"));
}

}  // namespace gnn
