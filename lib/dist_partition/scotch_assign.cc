#include "dist_partition/scotch_assign.h"

// PT-Scotch's headers need <stdio.h> and <mpi.h> first.
#include <mpi.h>
#include <sched.h>
#include <stdio.h>

#include <cstdarg>
#include <mutex>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "common/log.h"

extern "C" {
#include <ptscotch.h>
}

static_assert(std::is_same_v<SCOTCH_Num, int64_t>,
              "gnn needs the 64-bit PT-Scotch (/usr/include/scotch-int64)");

namespace {

// PT-Scotch reports errors through these (its libptscotcherr would print
// them); gnn keeps the last one for its own error line.
std::mutex g_error_mutex;
std::string g_last_error;

void Keep(const char* kind, const char* format, va_list args) {
  char text[1024];
  std::vsnprintf(text, sizeof(text), format, args);
  std::lock_guard<std::mutex> lock(g_error_mutex);
  g_last_error = std::string(kind) + text;
}

}  // namespace

extern "C" {
void SCOTCH_errorProg(const char* const) {}
void SCOTCH_errorPrint(const char* const format, ...) {
  va_list args;
  va_start(args, format);
  Keep("", format, args);
  va_end(args);
}
void SCOTCH_errorPrintW(const char* const format, ...) {
  va_list args;
  va_start(args, format);
  char text[1024];
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  GNN_LOG(kWarn) << "PT-Scotch: " << text;
}
}

namespace gnn {

const char* ScotchVersion() { return "PT-Scotch 7.0 (64-bit SCOTCH_Num)"; }

namespace {

[[noreturn]] void Fail(const std::string& call) {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  throw Error("PT-Scotch " + call + " failed" +
              (g_last_error.empty() ? std::string() : ": " + g_last_error));
}

// Owns the graph, its view bound to a context (fixed seed, deterministic
// threads) and the strategy.
struct ScotchState {
  SCOTCH_Dgraph graph, bound;
  SCOTCH_Context context;
  SCOTCH_Strat strat;
  bool graph_ok = false, context_ok = false, bound_ok = false, strat_ok = false;
  ~ScotchState() {
    if (strat_ok) SCOTCH_stratExit(&strat);
    if (bound_ok) SCOTCH_dgraphExit(&bound);
    if (graph_ok) SCOTCH_dgraphExit(&graph);
    if (context_ok) SCOTCH_contextExit(&context);
  }
};

}  // namespace

std::vector<int32_t> ScotchAssign(MpiComm& comm, std::vector<int64_t>& indptr,
                                  std::vector<int64_t>& indices, std::vector<int64_t>& weights,
                                  int num_parts, double imbalance, uint64_t seed) {
  const SCOTCH_Num rows = static_cast<SCOTCH_Num>(indptr.size()) - 1;
  ScotchState s;
  if (SCOTCH_dgraphInit(&s.graph, comm.comm()) != 0) Fail("dgraphInit");
  s.graph_ok = true;
  const SCOTCH_Num entries = static_cast<SCOTCH_Num>(indices.size());
  // A rank without nodes still passes arrays (PT-Scotch takes a null
  // weight array as "no weights", which must agree on every rank).
  SCOTCH_Num none[2] = {0, 0};
  SCOTCH_Num* vertices = indptr.empty() ? none : indptr.data();
  SCOTCH_Num* vweights = weights.empty() ? none : weights.data();
  SCOTCH_Num* edges = indices.empty() ? none : indices.data();
  if (SCOTCH_dgraphBuild(&s.graph, 0, rows, rows, vertices, nullptr, vweights, nullptr, entries,
                         entries, edges, nullptr, nullptr) != 0) {
    Fail("dgraphBuild");
  }
  if (SCOTCH_stratInit(&s.strat) != 0) Fail("stratInit");
  s.strat_ok = true;
  if (SCOTCH_stratDgraphMapBuild(&s.strat, SCOTCH_STRATQUALITY, comm.size(), num_parts,
                                 imbalance) != 0) {
    Fail("stratDgraphMapBuild");
  }
  // The same input, seed and rank count give the same parts.
  if (SCOTCH_contextInit(&s.context) != 0) Fail("contextInit");
  s.context_ok = true;
  if (SCOTCH_contextOptionSetNum(&s.context, SCOTCH_OPTIONNUMDETERMINISTIC, 1) != 0 ||
      SCOTCH_contextOptionSetNum(&s.context, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1) != 0) {
    Fail("contextOptionSetNum");
  }
  SCOTCH_contextRandomSeed(&s.context, static_cast<SCOTCH_Num>(seed & 0x7fffffff));
  // PT-Scotch pins its threads to cores (by default all to the first ones):
  // one thread, on a core of this process's set chosen by rank (ranks
  // sharing a host spread over its cores); the process's own set comes
  // back afterwards, for gnn's threads.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool have_mask = sched_getaffinity(0, sizeof(allowed), &allowed) == 0;
  if (have_mask && CPU_COUNT(&allowed) > 0) {
    std::vector<int> cores;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &allowed)) cores.push_back(c);
    }
    const int core = cores[static_cast<size_t>(comm.rank()) % cores.size()];
    if (SCOTCH_contextThreadSpawn(&s.context, 1, &core) != 0) Fail("contextThreadSpawn");
  }
  if (SCOTCH_dgraphInit(&s.bound, comm.comm()) != 0) Fail("dgraphInit");
  s.bound_ok = true;
  if (SCOTCH_contextBindDgraph(&s.context, &s.graph, &s.bound) != 0) Fail("contextBindDgraph");
  std::vector<SCOTCH_Num> part(static_cast<size_t>(rows));
  const int rc = SCOTCH_dgraphPart(&s.bound, num_parts, &s.strat, part.data());
  if (have_mask) sched_setaffinity(0, sizeof(allowed), &allowed);
  if (rc != 0) Fail("dgraphPart");
  std::vector<int32_t> out(part.size());
  for (size_t i = 0; i < part.size(); ++i) {
    if (part[i] < 0 || part[i] >= num_parts) Fail("dgraphPart (part id out of range)");
    out[i] = static_cast<int32_t>(part[i]);
  }
  return out;
}

}  // namespace gnn
