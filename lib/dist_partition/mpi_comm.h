// The MPI that distributed partitioning runs on (mpirun, Slurm's srun, or
// gnn-partition's own mpirun over an ip_config): the few collectives it
// needs, each a nonblocking MPI call waited on with a deadline, so no wait
// is unbounded, and byte exchanges of any size (64-bit counts, sent in
// pieces MPI's int counts can take).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace gnn {

class MpiComm {
 public:
  // MPI_Init_thread (once per process); `wait_timeout_s` bounds every wait
  // for the other ranks (one error line naming what it waited for, then the
  // job ends). Destroyed while an exception unwinds, it ends the job
  // (MPI_Abort) instead of finalizing, which would wait for the others.
  MpiComm(int* argc, char*** argv, double wait_timeout_s);
  ~MpiComm();
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return MPI_COMM_WORLD; }

  // Element-wise sum / max over ranks of `v` (every rank the same length).
  std::vector<int64_t> AllreduceSum(std::vector<int64_t> v, const std::string& what);
  std::vector<int64_t> AllreduceMax(std::vector<int64_t> v, const std::string& what);
  int64_t AllreduceSum(int64_t x, const std::string& what) {
    return AllreduceSum(std::vector<int64_t>{x}, what)[0];
  }
  int64_t AllreduceMax(int64_t x, const std::string& what) {
    return AllreduceMax(std::vector<int64_t>{x}, what)[0];
  }
  // Element-wise sum over ranks below this one (zeros on rank 0).
  std::vector<int64_t> ExscanSum(const std::vector<int64_t>& v, const std::string& what);
  // Every rank's string, in rank order.
  std::vector<std::string> AllgatherStrings(const std::string& s, const std::string& what);
  void Barrier(const std::string& what);

  // Sends send[begin_p, begin_p + counts[p]) bytes to each rank p (pieces
  // laid out in rank order) and receives what every rank sent here,
  // concatenated in rank order, into place(total bytes) (called once);
  // *recv_counts gets each rank's byte count.
  void AlltoallvBytes(const char* send, const std::vector<int64_t>& counts,
                      std::vector<int64_t>* recv_counts, const std::function<char*(int64_t)>& place,
                      const std::string& what);

  // Typed AlltoallvBytes into a vector (no second copy): `counts` and
  // *recv_counts in elements.
  template <typename T>
  std::vector<T> Alltoallv(const std::vector<T>& send, const std::vector<int64_t>& counts,
                           std::vector<int64_t>* recv_counts, const std::string& what) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<int64_t> bytes(counts.size());
    for (size_t p = 0; p < counts.size(); ++p) bytes[p] = counts[p] * int64_t{sizeof(T)};
    std::vector<T> out;
    AlltoallvBytes(
        reinterpret_cast<const char*>(send.data()), bytes, recv_counts,
        [&](int64_t total) {
          out.resize(static_cast<size_t>(total) / sizeof(T));
          return reinterpret_cast<char*>(out.data());
        },
        what);
    for (int64_t& c : *recv_counts) c /= int64_t{sizeof(T)};
    return out;
  }

  // Bytes this rank sent to other ranks through AlltoallvBytes so far.
  int64_t bytes_sent() const { return bytes_sent_; }

  // Ends the whole job now (a wait timed out: the ranks no longer agree on
  // where they are, so they cannot stop together).
  [[noreturn]] void Abort(int code);

 private:
  // Waits for `requests` until the deadline. When it passes, prints one
  // line naming `what` and ends the job (MPI_Abort): the requests' buffers
  // must not be freed while MPI may still write them.
  void Wait(std::vector<MPI_Request>& requests, const std::string& what);

  int rank_ = 0, size_ = 1;
  double timeout_s_;
  int64_t bytes_sent_ = 0;
};

}  // namespace gnn
