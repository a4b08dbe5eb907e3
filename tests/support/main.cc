// The suites' main: Catch2, with the test cluster secret in place first.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "test_util.h"

int main(int argc, char** argv) {
  gnn::test::InstallTestSecret();
  const int rc = Catch::Session().run(argc, argv);
  gnn::test::RemoveTestSecret();
  return rc;
}
