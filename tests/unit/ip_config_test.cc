#include "net/ip_config.h"

#include <catch2/catch.hpp>
#include <fstream>

#include "common/error.h"
#include "partition/config.h"
#include "test_util.h"

using namespace gnn;

TEST_CASE("ip_config accepts comments, blanks, default ports, hostnames and IPv6", "[unit]") {
  const std::string text =
      "# cluster of five\n"
      "\n"
      "10.0.0.1\n"
      "   10.0.0.2   30060   # trailing comment\n"
      "\t\n"
      "node-3.cluster.local 40000\r\n"
      "fe80::1%eth0\n"
      "[2001:db8::7] 1\n"
      "10.0.0.1 30051\n"
      "# the end";
  auto m = ParseIpConfig(text, "ip_config.txt");
  REQUIRE(m.size() == 6);
  CHECK(m[0].host == "10.0.0.1");
  CHECK(m[0].port == kDefaultPort);
  CHECK(m[0].line == 3);
  CHECK(m[1].host == "10.0.0.2");
  CHECK(m[1].port == 30060);
  CHECK(m[1].line == 4);
  CHECK(m[2].host == "node-3.cluster.local");
  CHECK(m[2].port == 40000);
  CHECK(m[3].host == "fe80::1%eth0");
  CHECK(m[3].port == 30050);
  CHECK(m[4].host == "2001:db8::7");
  CHECK(m[4].port == 1);
  CHECK(m[4].line == 8);
  CHECK(m[5].port == 30051);

  CHECK(Endpoint(m[0], 0) == "tcp://10.0.0.1:30050");
  CHECK(Endpoint(m[1], 3) == "tcp://10.0.0.2:30063");
  CHECK(Endpoint(m[2], 1) == "tcp://node-3.cluster.local:40001");
  CHECK(Endpoint(m[4], 2) == "tcp://[2001:db8::7]:3");
  CHECK(Endpoint(MachineAddress{"::1", 65535, 1}, 0) == "tcp://[::1]:65535");
  CHECK_THROWS_AS(Endpoint(MachineAddress{"::1", 65535, 1}, 1), ConfigError);
  CHECK_THROWS_AS(Endpoint(m[0], -1), ConfigError);

  // One machine, localhost, is the smallest valid file.
  auto one = ParseIpConfig("localhost", "one.txt");
  REQUIRE(one.size() == 1);
  CHECK(one[0].host == "localhost");
  CHECK(Endpoint(one[0], 0) == "tcp://localhost:30050");
}

TEST_CASE("ip_config rejects every bad line, naming file and line", "[unit]") {
  struct Bad {
    std::string text;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {"10.0.0.1\n\n10.0.0.2 99999\n", "ip_config.txt:3: port 99999 out of range"},
      {"10.0.0.1 0\n", "ip_config.txt:1: port 0 out of range"},
      {"10.0.0.1 123456789012345678901234567890\n", "ip_config.txt:1: port 1234"},
      {"10.0.0.1 -5\n", "ip_config.txt:1: port '-5' is not a number"},
      {"10.0.0.1 30050x\n", "ip_config.txt:1: port '30050x' is not a number"},
      {"10.0.0.1 30050 extra\n", "ip_config.txt:1: expected 'HOST [PORT]', got 3 fields"},
      {"# c\n10.0.0.256\n", "ip_config.txt:2: '10.0.0.256' is not a valid IPv4 address"},
      {"1.2.3\n", "ip_config.txt:1: '1.2.3' is not a valid IPv4 address"},
      {"10.0.0.1:30050\n", "ip_config.txt:1: '10.0.0.1:30050' is not a valid IPv6 address"},
      {"fe80::1::2\n", "ip_config.txt:1: 'fe80::1::2' is not a valid IPv6"},
      {"fe80::1%\n", "ip_config.txt:1: empty IPv6 zone"},
      {"[::1]:30050\n", "ip_config.txt:1: malformed address '[::1]:30050'"},
      {"[10.0.0.1]\n", "ip_config.txt:1: malformed address '[10.0.0.1]'"},
      {"bad_host!\n", "ip_config.txt:1: 'bad_host!' is not a valid host name"},
      {"-leading.example\n", "ip_config.txt:1: '-leading.example' is not a valid host name"},
      {"a..b\n", "ip_config.txt:1: 'a..b' is not a valid host name"},
      {std::string(64, 'a') + ".example\n", "ip_config.txt:1: '" + std::string(64, 'a')},
      {"10.0.0.1\n10.0.0.2\n10.0.0.1 30050\n",
       "ip_config.txt:3: duplicate machine 10.0.0.1 port 30050 (first on line 1)"},
      {"Node1\nnode1\n", "ip_config.txt:2: duplicate machine node1 port 30050 (first on line 1)"},
      {"::1\n0:0:0:0:0:0:0:1 30050\n", "ip_config.txt:2: duplicate machine"},
      {"", "ip_config.txt: no machines listed"},
      {"# only comments\n\n   \n", "ip_config.txt: no machines listed"},
  };
  for (const Bad& b : cases) {
    INFO("input: " << b.text);
    CHECK_THROWS_AS(ParseIpConfig(b.text, "ip_config.txt"), ConfigError);
    CHECK_THROWS_WITH(ParseIpConfig(b.text, "ip_config.txt"), Catch::Contains(b.message));
  }
}

TEST_CASE("ip_config ReadIpConfig names the file, server port ranges are checked", "[unit]") {
  test::TempDir dir;
  const std::string path = dir / "ip_config.txt";
  CHECK_THROWS_AS(ReadIpConfig(path), ConfigError);
  CHECK_THROWS_WITH(ReadIpConfig(path),
                    Catch::Contains("cannot open " + path + ": No such file or directory"));
  CHECK_THROWS_WITH(ReadIpConfig(dir.path()),
                    Catch::Contains("cannot open " + dir.path() + ": Is a directory"));
  {
    std::ofstream f(path);
    f << "127.0.0.1 30050\n127.0.0.1 30052\nhost.example 70000\n";
  }
  CHECK_THROWS_WITH(ReadIpConfig(path), Catch::Contains(path + ":3: port 70000 out of range"));
  {
    std::ofstream f(path);
    f << "127.0.0.1 30050\n127.0.0.1 30052\n";
  }
  auto m = ReadIpConfig(path);
  REQUIRE(m.size() == 2);
  CHECK_NOTHROW(CheckServerPorts(m, 2, path));
  CHECK_THROWS_WITH(
      CheckServerPorts(m, 3, path),
      Catch::Contains(path + ":2: server ports 30052..30054 overlap those of line 1"));
  CHECK_THROWS_AS(CheckServerPorts(m, 0, path), ConfigError);
  auto high = ParseIpConfig("10.0.0.1 65535\n", "hi.txt");
  CHECK_NOTHROW(CheckServerPorts(high, 1, "hi.txt"));
  CHECK_THROWS_WITH(CheckServerPorts(high, 2, "hi.txt"),
                    Catch::Contains("hi.txt:1: ports 65535..65536"));
}

TEST_CASE("machine m serves partition m mod P, and every partition needs a machine", "[unit]") {
  CHECK(MachinePartition(0, 2) == 0);
  CHECK(MachinePartition(3, 2) == 1);
  CHECK(MachinePartition(4, 2) == 0);
  CHECK(PartitionMachines(0, 2, 5) == std::vector<int>{0, 2, 4});
  CHECK(PartitionMachines(1, 2, 5) == std::vector<int>{1, 3});
  CHECK(PartitionMachines(1, 2, 1).empty());
  CHECK_NOTHROW(CheckMachinesForParts(2, 2, "ip.txt"));
  CHECK_NOTHROW(CheckMachinesForParts(2, 5, "ip.txt"));
  CHECK_THROWS_WITH(CheckMachinesForParts(3, 2, "ip.txt"),
                    Catch::Contains("ip.txt lists 2 machines for 3 partitions"));
  CHECK_THROWS_AS(CheckMachinesForParts(0, 2, "ip.txt"), ConfigError);
}
