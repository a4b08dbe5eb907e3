#include "common/npy.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/error.h"

namespace gnn {

const char* DTypeDescr(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return "|u1";
    case DType::kInt32:
      return "<i4";
    case DType::kInt64:
      return "<i8";
    case DType::kFloat32:
      return "<f4";
    case DType::kFloat16:
      return "<f2";
    case DType::kFloat64:
      return "<f8";
  }
  return "?";
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return 1;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
      return 2;
    case DType::kFloat64:
      return 8;
  }
  return 0;
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
  if (d == "|u1" || d == "<u1" || d == "|b1")
    *out = DType::kUInt8;
  else if (d == "<i4")
    *out = DType::kInt32;
  else if (d == "<i8")
    *out = DType::kInt64;
  else if (d == "<f4")
    *out = DType::kFloat32;
  else if (d == "<f2")
    *out = DType::kFloat16;
  else if (d == "<f8")
    *out = DType::kFloat64;
  else
    return false;
  return true;
}

// magic(6) + version(2) + header length (2 bytes in format 1.0, 4 in 2.0/3.0).
size_t PreambleBytes(uint8_t major) { return major == 1 ? 10 : 12; }

// Reads the preamble of `p` (`size` bytes available) and returns the offset
// of the array data, i.e. the preamble plus the header dict.
size_t NpyDataOffset(const uint8_t* p, size_t size, const std::string& name) {
  if (size < 8 || std::memcmp(p, "\x93NUMPY", 6) != 0) {
    throw DataError(name + ": not a .npy file (bad magic)");
  }
  const uint8_t major = p[6], minor = p[7];
  if (major < 1 || major > 3 || minor != 0) {
    throw DataError(name + ": unsupported .npy version " + std::to_string(major) + "." +
                    std::to_string(minor));
  }
  const size_t pre = PreambleBytes(major);
  if (size < pre) throw DataError(name + ": truncated .npy header");
  uint64_t len = p[8] | (static_cast<uint64_t>(p[9]) << 8);
  if (major > 1) len |= (static_cast<uint64_t>(p[10]) << 16) | (static_cast<uint64_t>(p[11]) << 24);
  if (len == 0 || len > kMaxNpyHeaderBytes) {
    throw DataError(name + ": .npy header length " + std::to_string(len) + " outside [1, " +
                    std::to_string(kMaxNpyHeaderBytes) + "]");
  }
  return pre + static_cast<size_t>(len);
}

// The header dict, a Python literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// followed by space padding and '\n'. Only that grammar is accepted.
class HeaderDict {
 public:
  HeaderDict(const char* begin, const char* end, const std::string& name)
      : p_(begin), end_(end), name_(name) {}

  NpyHeader Parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    Expect('{');
    while (SkipSpace(), Peek() != '}') {
      const std::string key = String();
      Expect(':');
      if (key == "descr" && !have_descr) {
        const std::string descr = String();
        if (!ParseDescr(descr, &h.dtype)) Fail("unsupported dtype '" + descr + "'");
        have_descr = true;
      } else if (key == "fortran_order" && !have_order) {
        if (Bool()) Fail("Fortran-order arrays are not supported");
        have_order = true;
      } else if (key == "shape" && !have_shape) {
        h.shape = Tuple();
        have_shape = true;
      } else {
        Fail("unexpected or repeated key '" + key + "' in .npy header");
      }
      if (SkipSpace(), Peek() == ',') ++p_;
    }
    ++p_;  // '}'
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n')) ++p_;
    if (p_ != end_) Fail("junk after the .npy header dict");
    if (!have_descr || !have_order || !have_shape) {
      Fail(std::string(".npy header lacks '") +
           (!have_descr   ? "descr"
            : !have_order ? "fortran_order"
                          : "shape") +
           "'");
    }
    return h;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const { throw DataError(name_ + ": " + what); }
  void SkipSpace() {
    while (p_ < end_ && *p_ == ' ') ++p_;
  }
  char Peek() const {
    if (p_ >= end_) Fail("malformed .npy header (ends early)");
    return *p_;
  }
  void Expect(char c) {
    SkipSpace();
    if (Peek() != c) Fail(std::string("malformed .npy header (expected '") + c + "')");
    ++p_;
  }
  std::string String() {
    SkipSpace();
    const char quote = Peek();
    if (quote != '\'' && quote != '"') Fail("malformed .npy header (expected a string)");
    const char* b = ++p_;
    while (Peek() != quote) {
      if (*p_ == '\\' || *p_ == '\n') Fail("malformed .npy header (bad string)");
      ++p_;
    }
    return std::string(b, p_++);
  }
  bool Bool() {
    SkipSpace();
    for (bool v : {false, true}) {
      const char* word = v ? "True" : "False";
      const size_t len = std::strlen(word);
      if (static_cast<size_t>(end_ - p_) >= len && std::memcmp(p_, word, len) == 0) {
        p_ += len;
        return v;
      }
    }
    Fail("malformed .npy header (expected True or False)");
  }
  int64_t Extent() {
    SkipSpace();
    if (Peek() == '-') Fail("negative extent in .npy shape");
    int64_t v = 0;
    auto r = std::from_chars(p_, end_, v);
    if (r.ec == std::errc::result_out_of_range) Fail(".npy shape extent does not fit int64");
    if (r.ec != std::errc()) Fail("malformed .npy shape (expected an integer)");
    p_ = r.ptr;
    if (p_ < end_ && *p_ == 'L') ++p_;  // Python 2's long literals
    return v;
  }
  std::vector<int64_t> Tuple() {
    std::vector<int64_t> shape;
    Expect('(');
    while (SkipSpace(), Peek() != ')') {
      if (shape.size() == kMaxNpyDims) {
        Fail(".npy shape has more than " + std::to_string(kMaxNpyDims) + " dimensions");
      }
      shape.push_back(Extent());
      SkipSpace();
      if (Peek() == ',') {
        ++p_;
      } else if (Peek() != ')') {
        Fail("malformed .npy shape (expected ',' or ')')");
      }
    }
    ++p_;  // ')'
    return shape;
  }

  const char* p_;
  const char* end_;
  const std::string& name_;
};

// Reads the header at the start of the open file `f` of `file_size` bytes,
// leaving the file positioned at the data.
NpyHeader ReadHeaderFrom(FILE* f, uint64_t file_size, const std::string& path) {
  uint8_t pre[12];
  const size_t got = std::fread(pre, 1, sizeof(pre), f);
  const size_t offset = NpyDataOffset(pre, got, path);
  if (offset > file_size) throw DataError(path + ": truncated .npy header");
  std::vector<uint8_t> head(offset);
  if (std::fseek(f, 0, SEEK_SET) != 0 || std::fread(head.data(), 1, offset, f) != offset) {
    throw DataError(CannotMessage("read", path, errno));
  }
  return ParseNpyHeader(head.data(), head.size(), file_size, path);
}

uint64_t FileSize(FILE* f, const std::string& path) {
  struct stat st;
  if (::fstat(::fileno(f), &st) != 0) {
    throw DataError(CannotMessage("stat", path, errno));
  }
  if (!S_ISREG(st.st_mode)) throw DataError(path + ": not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

int64_t ShapeElements(const std::vector<int64_t>& shape, DType dtype, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw DataError(what + ": negative extent in shape " + ShapeString(shape));
    if (__builtin_mul_overflow(n, d, &n)) {
      throw DataError(what + ": shape " + ShapeString(shape) + " has more than 2^63 elements");
    }
  }
  int64_t bytes;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(DTypeSize(dtype)), &bytes)) {
    throw DataError(what + ": shape " + ShapeString(shape) + " of " + DTypeDescr(dtype) +
                    " is more than 2^63 bytes");
  }
  return n;
}

NpyHeader ParseNpyHeader(const void* data, size_t size, uint64_t file_size,
                         const std::string& name) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  const size_t offset = NpyDataOffset(p, size, name);
  if (size < offset || file_size < offset) throw DataError(name + ": truncated .npy header");
  const char* dict = reinterpret_cast<const char*>(p) + PreambleBytes(p[6]);
  NpyHeader h = HeaderDict(dict, reinterpret_cast<const char*>(p) + offset, name).Parse();
  h.data_offset = offset;
  h.num_elements = ShapeElements(h.shape, h.dtype, name);
  h.data_bytes = static_cast<uint64_t>(h.num_elements) * DTypeSize(h.dtype);
  if (file_size - offset != h.data_bytes) {
    throw DataError(name + ": file has " + std::to_string(file_size) + " bytes, header says " +
                    std::to_string(offset) + " + " + std::to_string(h.data_bytes) +
                    " (truncated or corrupt)");
  }
  return h;
}

NpyWriter::NpyWriter(const std::string& path, DType dtype, std::vector<int64_t> shape)
    : file_(path), dtype_(dtype) {
  if (shape.size() > kMaxNpyDims) {
    throw DataError("internal: " + path + ": shape has more than " + std::to_string(kMaxNpyDims) +
                    " dimensions");
  }
  expected_ = ShapeElements(shape, dtype, path);
  std::string header = MakeHeader(dtype, shape);
  file_.Write(header.data(), header.size());
  sha_.Update(header.data(), header.size());
  bytes_ = header.size();
}

void NpyWriter::Append(const void* data, int64_t num_elements) {
  if (num_elements < 0 || num_elements > expected_ - written_) {
    throw DataError("internal: " + file_.path() + ": appending " + std::to_string(num_elements) +
                    " elements after " + std::to_string(written_) + " of " +
                    std::to_string(expected_));
  }
  // Cannot overflow: num_elements <= expected_, whose byte size was checked.
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
  FilePtr f = OpenForRead(path);
  return ReadHeaderFrom(f.get(), FileSize(f.get(), path), path);
}

template <typename T>
std::vector<T> ReadNpy(const std::string& path, const std::vector<int64_t>& expected_shape,
                       std::vector<int64_t>* shape_out) {
  FilePtr f = OpenForRead(path);
  NpyHeader h = ReadHeaderFrom(f.get(), FileSize(f.get(), path), path);
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
  // The size was checked against the file's, so this allocation is bounded
  // by what is on disk. The stream is positioned at the data.
  std::vector<T> data(static_cast<size_t>(h.num_elements));
  if (std::fread(data.data(), sizeof(T), data.size(), f.get()) != data.size()) {
    throw DataError("cannot read " + path + " (file shrank while being read?)");
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

namespace {

// IEEE half -> float (subnormals, infinities and NaN included).
float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits = 0;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant != 0) {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ff) << 13);
  } else {
    bits = sign;
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The raw bytes of a whole array (header checked against the file's size).
std::vector<char> ReadNpyBytes(const std::string& path, NpyHeader* header) {
  FilePtr f = OpenForRead(path);
  *header = ReadHeaderFrom(f.get(), FileSize(f.get(), path), path);
  std::vector<char> bytes(static_cast<size_t>(header->data_bytes));
  if (!bytes.empty() && std::fread(bytes.data(), 1, bytes.size(), f.get()) != bytes.size()) {
    throw DataError(path + ": truncated (" + std::to_string(bytes.size()) +
                    " bytes of data expected)");
  }
  return bytes;
}

template <typename From, typename To>
void Convert(const char* bytes, size_t size, std::vector<To>* out) {
  out->resize(size / sizeof(From));
  for (size_t i = 0; i < out->size(); ++i) {
    From v;
    std::memcpy(&v, bytes + i * sizeof(From), sizeof(From));
    (*out)[i] = static_cast<To>(v);
  }
}

// Integer dtypes (uint8/bool, int32, int64) widened into *out; false for
// a float dtype.
template <typename To>
bool ConvertIntegers(DType dtype, const char* bytes, size_t size, std::vector<To>* out) {
  switch (dtype) {
    case DType::kUInt8:
      Convert<uint8_t>(bytes, size, out);
      return true;
    case DType::kInt32:
      Convert<int32_t>(bytes, size, out);
      return true;
    case DType::kInt64:
      Convert<int64_t>(bytes, size, out);
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<float> NpyToFloats(const NpyHeader& header, const char* data) {
  const size_t size = static_cast<size_t>(header.data_bytes);
  std::vector<float> out;
  if (ConvertIntegers(header.dtype, data, size, &out)) return out;
  if (header.dtype == DType::kFloat16) {
    out.resize(size / 2);
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, data + 2 * i, 2);
      out[i] = HalfToFloat(h);
    }
  } else if (header.dtype == DType::kFloat64) {
    Convert<double>(data, size, &out);
  } else {
    Convert<float>(data, size, &out);
  }
  return out;
}

std::vector<int64_t> NpyToInts(const NpyHeader& header, const char* data, const std::string& name) {
  std::vector<int64_t> out;
  if (!ConvertIntegers(header.dtype, data, static_cast<size_t>(header.data_bytes), &out)) {
    throw DataError(name + ": dtype " + DTypeDescr(header.dtype) +
                    " holds floats; integers (int32, int64, uint8 or bool) are expected");
  }
  return out;
}

std::vector<float> ReadNpyFloats(const std::string& path, NpyHeader* header) {
  const std::vector<char> bytes = ReadNpyBytes(path, header);
  return NpyToFloats(*header, bytes.data());
}

std::vector<int64_t> ReadNpyInts(const std::string& path, NpyHeader* header) {
  const std::vector<char> bytes = ReadNpyBytes(path, header);
  return NpyToInts(*header, bytes.data(), path);
}

}  // namespace gnn
