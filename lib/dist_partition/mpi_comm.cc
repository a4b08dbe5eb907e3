#include "dist_partition/mpi_comm.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <thread>

#include "common/error.h"
#include "dist_partition/dist_partition.h"

namespace gnn {

namespace {

// Largest piece of one point-to-point message (MPI counts are int).
constexpr int64_t kPieceBytes = int64_t{1} << 30;

void Check(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw PeerError("MPI failed during " + what + ": " + std::string(text, static_cast<size_t>(len)));
}

}  // namespace

bool UnderMpiLauncher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(v)) return true;
  }
  return false;
}

MpiComm::MpiComm(int* argc, char*** argv, double wait_timeout_s) : timeout_s_(wait_timeout_s) {
  int provided = 0;
  Check(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiComm::~MpiComm() {
  if (std::uncaught_exceptions() > 0) MPI_Abort(MPI_COMM_WORLD, kExitError);
  MPI_Finalize();
}

void MpiComm::Abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void MpiComm::Wait(std::vector<MPI_Request>& requests, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  int spins = 0;
  for (;;) {
    int done = 0;
    Check(
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
        what);
    if (done) return;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout_s_) {
      std::cerr << "gnn-partition: error: machine " << rank_ << ": waited "
                << static_cast<int>(waited) << " s for the other machines during " << what
                << " (--wait_timeout)" << std::endl;
      Abort(kExitTimeout);
    }
    // Spin briefly (transfers progress inside MPI calls), then back off.
    if (++spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

namespace {

// One nonblocking element-wise reduction of int64 values.
MPI_Request StartAllreduce(const std::vector<int64_t>& v, std::vector<int64_t>* out, MPI_Op op,
                           const std::string& what) {
  MPI_Request r;
  out->assign(v.size(), 0);
  Check(MPI_Iallreduce(v.data(), out->data(), static_cast<int>(v.size()), MPI_INT64_T, op,
                       MPI_COMM_WORLD, &r),
        what);
  return r;
}

}  // namespace

std::vector<int64_t> MpiComm::AllreduceSum(std::vector<int64_t> v, const std::string& what) {
  std::vector<int64_t> out;
  std::vector<MPI_Request> r = {StartAllreduce(v, &out, MPI_SUM, what)};
  Wait(r, what);
  return out;
}

std::vector<int64_t> MpiComm::AllreduceMax(std::vector<int64_t> v, const std::string& what) {
  std::vector<int64_t> out;
  std::vector<MPI_Request> r = {StartAllreduce(v, &out, MPI_MAX, what)};
  Wait(r, what);
  return out;
}

std::vector<int64_t> MpiComm::ExscanSum(const std::vector<int64_t>& v, const std::string& what) {
  std::vector<int64_t> out(v.size(), 0);
  std::vector<MPI_Request> r(1);
  Check(MPI_Iexscan(v.data(), out.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_SUM,
                    MPI_COMM_WORLD, &r[0]),
        what);
  Wait(r, what);
  if (rank_ == 0) std::fill(out.begin(), out.end(), 0);  // MPI leaves rank 0's undefined
  return out;
}

std::vector<std::string> MpiComm::AllgatherStrings(const std::string& s, const std::string& what) {
  std::vector<int64_t> sizes(static_cast<size_t>(size_), 0);
  sizes[static_cast<size_t>(rank_)] = static_cast<int64_t>(s.size());
  sizes = AllreduceSum(sizes, what);
  // Everyone sends its string to everyone.
  std::vector<char> send;
  std::vector<int64_t> counts(static_cast<size_t>(size_), static_cast<int64_t>(s.size()));
  for (int p = 0; p < size_; ++p) send.insert(send.end(), s.begin(), s.end());
  std::vector<int64_t> got_counts;
  std::vector<char> got;
  AlltoallvBytes(
      send.data(), counts, &got_counts,
      [&](int64_t total) {
        got.resize(static_cast<size_t>(total));
        return got.data();
      },
      what);
  std::vector<std::string> out;
  size_t at = 0;
  for (int p = 0; p < size_; ++p) {
    out.emplace_back(got.data() + at, static_cast<size_t>(got_counts[static_cast<size_t>(p)]));
    at += static_cast<size_t>(got_counts[static_cast<size_t>(p)]);
  }
  return out;
}

void MpiComm::Barrier(const std::string& what) {
  std::vector<MPI_Request> r(1);
  Check(MPI_Ibarrier(MPI_COMM_WORLD, &r[0]), what);
  Wait(r, what);
}

void MpiComm::AlltoallvBytes(const char* send, const std::vector<int64_t>& counts,
                             std::vector<int64_t>* recv_counts,
                             const std::function<char*(int64_t)>& place, const std::string& what) {
  const size_t P = static_cast<size_t>(size_);
  recv_counts->assign(P, 0);
  {
    std::vector<MPI_Request> r(1);
    Check(MPI_Ialltoall(counts.data(), 1, MPI_INT64_T, recv_counts->data(), 1, MPI_INT64_T,
                        MPI_COMM_WORLD, &r[0]),
          what);
    Wait(r, what);
  }
  int64_t total = 0;
  std::vector<int64_t> recv_at(P), send_at(P);
  for (size_t p = 0, s = 0; p < P; ++p) {
    recv_at[p] = total;
    total += (*recv_counts)[p];
    send_at[p] = static_cast<int64_t>(s);
    s += static_cast<size_t>(counts[p]);
  }
  char* out = place(total);
  std::vector<MPI_Request> requests;
  for (size_t p = 0; p < P; ++p) {
    int tag = 0;
    for (int64_t at = 0; at < (*recv_counts)[p]; at += kPieceBytes, ++tag) {
      const int n = static_cast<int>(std::min(kPieceBytes, (*recv_counts)[p] - at));
      requests.emplace_back();
      Check(MPI_Irecv(out + recv_at[p] + at, n, MPI_BYTE, static_cast<int>(p), tag, MPI_COMM_WORLD,
                      &requests.back()),
            what);
    }
  }
  for (size_t p = 0; p < P; ++p) {
    if (static_cast<int>(p) != rank_) bytes_sent_ += counts[p];
    int tag = 0;
    for (int64_t at = 0; at < counts[p]; at += kPieceBytes, ++tag) {
      const int n = static_cast<int>(std::min(kPieceBytes, counts[p] - at));
      requests.emplace_back();
      Check(MPI_Isend(send + send_at[p] + at, n, MPI_BYTE, static_cast<int>(p), tag, MPI_COMM_WORLD,
                      &requests.back()),
            what);
    }
  }
  Wait(requests, what);
}

}  // namespace gnn
