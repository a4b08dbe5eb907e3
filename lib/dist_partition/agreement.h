// How the ranks of a distributed partitioning fail together: each runs a
// local step that may meet bad input, then all learn whether any failed.
#pragma once

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "common/error.h"
#include "dist_partition/dist_partition.h"
#include "dist_partition/mpi_comm.h"

namespace gnn {

// Run(what, step) runs `step` here, then agrees with every rank: when any
// failed, all throw JobFailed with the lowest failing rank's exit code (its
// error class's) and message, prefixed "machine i: " when i is not rank 0.
class Agreement {
 public:
  explicit Agreement(MpiComm& comm) : comm_(comm) {}

  template <typename F>
  void Run(const std::string& what, F&& step) {
    int code = 0;
    std::string message;
    try {
      step();
    } catch (const std::bad_alloc&) {
      code = kExitError, message = "out of memory while " + what;
    } catch (const std::exception& e) {
      code = ExitCodeOf(e), message = e.what();
    }
    Settle(code, message, what);
  }

 private:
  void Settle(int code, const std::string& message, const std::string& what) {
    std::vector<int64_t> codes(static_cast<size_t>(comm_.size()), 0);
    codes[static_cast<size_t>(comm_.rank())] = code;
    codes = comm_.AllreduceSum(codes, what);
    const auto failed = std::find_if(codes.begin(), codes.end(), [](int64_t c) { return c != 0; });
    if (failed == codes.end()) return;
    const int who = static_cast<int>(failed - codes.begin());
    const std::vector<std::string> messages = comm_.AllgatherStrings(message, what);
    throw JobFailed(static_cast<int>(*failed),
                    (who == 0 ? std::string() : "machine " + std::to_string(who) + ": ") +
                        messages[static_cast<size_t>(who)]);
  }

  MpiComm& comm_;
};

}  // namespace gnn
