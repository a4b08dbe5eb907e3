#include "common/npy.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include "common/error.h"

namespace gnn {

const char* DTypeDescr(DType dtype) {
  switch (dtype) {
    case DType::kUInt8: return "|u1";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kFloat32: return "<f4";
  }
  return "?";
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kUInt8: return 1;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kFloat32: return 4;
  }
  return 0;
}

int64_t NpyHeader::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) s += ",";
    if (i + 1 < shape.size()) s += " ";
  }
  return s + ")";
}

std::string MakeHeader(DType dtype, const std::vector<int64_t>& shape) {
  std::string dict = std::string("{'descr': '") + DTypeDescr(dtype) +
                     "', 'fortran_order': False, 'shape': " + ShapeString(shape) + ", }";
  // magic(6) + version(2) + len(2) + dict + padding + '\n' must be a multiple of 64.
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict.push_back('\n');
  std::string header("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(dict.size());
  header.push_back(static_cast<char>(len & 0xff));
  header.push_back(static_cast<char>(len >> 8));
  return header + dict;
}

bool ParseDescr(const std::string& d, DType* out) {
  if (d == "|u1" || d == "<u1" || d == "|b1") *out = DType::kUInt8;
  else if (d == "<i4") *out = DType::kInt32;
  else if (d == "<i8") *out = DType::kInt64;
  else if (d == "<f4") *out = DType::kFloat32;
  else return false;
  return true;
}

}  // namespace

NpyWriter::NpyWriter(const std::string& path, DType dtype, std::vector<int64_t> shape)
    : file_(path), dtype_(dtype) {
  expected_ = 1;
  for (int64_t d : shape) expected_ *= d;
  std::string header = MakeHeader(dtype, shape);
  file_.Write(header.data(), header.size());
  sha_.Update(header.data(), header.size());
  bytes_ = header.size();
}

void NpyWriter::Append(const void* data, int64_t num_elements) {
  size_t size = static_cast<size_t>(num_elements) * DTypeSize(dtype_);
  file_.Write(data, size);
  sha_.Update(data, size);
  written_ += num_elements;
  bytes_ += size;
}

WrittenFile NpyWriter::Commit() {
  if (written_ != expected_) {
    throw DataError("internal: " + file_.path() + " got " + std::to_string(written_) +
                    " elements, shape needs " + std::to_string(expected_));
  }
  file_.Commit();
  return WrittenFile{bytes_, sha_.HexDigest()};
}

NpyHeader ReadNpyHeader(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw DataError("missing file " + path);
  char pre[10];
  if (std::fread(pre, 1, 10, f.get()) != 10 || std::memcmp(pre, "\x93NUMPY", 6) != 0) {
    throw DataError(path + ": not a .npy file (bad magic)");
  }
  if (pre[6] != 1) throw DataError(path + ": unsupported .npy version " + std::to_string(pre[6]));
  size_t len = static_cast<uint8_t>(pre[8]) | (static_cast<size_t>(static_cast<uint8_t>(pre[9])) << 8);
  std::string dict(len, '\0');
  if (std::fread(&dict[0], 1, len, f.get()) != len) throw DataError(path + ": truncated .npy header");

  NpyHeader h;
  h.data_offset = 10 + len;
  auto field = [&](const std::string& key) -> size_t {
    size_t p = dict.find("'" + key + "'");
    if (p == std::string::npos) throw DataError(path + ": .npy header lacks '" + key + "'");
    p = dict.find(':', p);
    if (p == std::string::npos) throw DataError(path + ": malformed .npy header");
    return p + 1;
  };
  size_t p = field("descr");
  size_t q1 = dict.find('\'', p);
  size_t q2 = q1 == std::string::npos ? q1 : dict.find('\'', q1 + 1);
  if (q2 == std::string::npos) throw DataError(path + ": malformed .npy descr");
  std::string descr = dict.substr(q1 + 1, q2 - q1 - 1);
  if (!ParseDescr(descr, &h.dtype)) throw DataError(path + ": unsupported dtype " + descr);
  p = field("fortran_order");
  if (dict.compare(dict.find_first_not_of(' ', p), 5, "False") != 0) {
    throw DataError(path + ": Fortran-order arrays are not supported");
  }
  p = field("shape");
  size_t open = dict.find('(', p), close = dict.find(')', p);
  if (open == std::string::npos || close == std::string::npos) {
    throw DataError(path + ": malformed .npy shape");
  }
  std::istringstream dims(dict.substr(open + 1, close - open - 1));
  std::string tok;
  while (std::getline(dims, tok, ',')) {
    size_t b = tok.find_first_not_of(" ");
    if (b == std::string::npos) continue;
    try {
      long long d = std::stoll(tok.substr(b));
      if (d < 0) throw std::invalid_argument("negative");
      h.shape.push_back(d);
    } catch (const std::exception&) {
      throw DataError(path + ": malformed .npy shape");
    }
  }
  if (std::fseek(f.get(), 0, SEEK_END) != 0) throw DataError(path + ": cannot seek");
  long long size = std::ftell(f.get());
  long long need = static_cast<long long>(h.data_offset) +
                   static_cast<long long>(h.NumElements() * DTypeSize(h.dtype));
  if (size != need) {
    throw DataError(path + ": file has " + std::to_string(size) + " bytes, header says " +
                    std::to_string(need) + " (truncated or corrupt)");
  }
  return h;
}

template <typename T>
std::vector<T> ReadNpy(const std::string& path, const std::vector<int64_t>& expected_shape,
                       std::vector<int64_t>* shape_out) {
  NpyHeader h = ReadNpyHeader(path);
  if (h.dtype != DTypeOf<T>()) {
    throw DataError(path + ": dtype " + DTypeDescr(h.dtype) + ", expected " +
                    DTypeDescr(DTypeOf<T>()));
  }
  if (!expected_shape.empty()) {
    bool ok = expected_shape.size() == h.shape.size();
    for (size_t i = 0; ok && i < h.shape.size(); ++i) {
      ok = expected_shape[i] < 0 || expected_shape[i] == h.shape[i];
    }
    if (!ok) {
      throw DataError(path + ": shape " + ShapeString(h.shape) + ", expected " +
                      ShapeString(expected_shape));
    }
  }
  std::vector<T> data(static_cast<size_t>(h.NumElements()));
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f || std::fseek(f.get(), static_cast<long>(h.data_offset), SEEK_SET) != 0 ||
      std::fread(data.data(), sizeof(T), data.size(), f.get()) != data.size()) {
    throw DataError("cannot read " + path);
  }
  if (shape_out) *shape_out = h.shape;
  return data;
}

template std::vector<uint8_t> ReadNpy(const std::string&, const std::vector<int64_t>&,
                                      std::vector<int64_t>*);
template std::vector<int32_t> ReadNpy(const std::string&, const std::vector<int64_t>&,
                                      std::vector<int64_t>*);
template std::vector<int64_t> ReadNpy(const std::string&, const std::vector<int64_t>&,
                                      std::vector<int64_t>*);
template std::vector<float> ReadNpy(const std::string&, const std::vector<int64_t>&,
                                    std::vector<int64_t>*);

}  // namespace gnn
