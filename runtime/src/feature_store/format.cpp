//===- format.cpp - Header encoding and checks of the feature store -------===//
#include "format.h"

#include "../spill/io.h"

#include <cstring>

namespace hector::fs {

namespace {
struct DtypeEntry {
  at::ScalarType type;
  uint32_t code;
};
constexpr DtypeEntry kDtypes[] = {
    {at::kFloat, 1}, {at::kDouble, 2}, {at::kHalf, 3}, {at::kBFloat16, 4}, {at::kChar, 5},
    {at::kByte, 6},  {at::kShort, 7},  {at::kInt, 8},  {at::kLong, 9},     {at::kBool, 10},
};
} // namespace

uint32_t dtypeCode(at::ScalarType type) {
  for (const auto &e : kDtypes)
    if (e.type == type)
      return e.code;
  return 0;
}

bool dtypeFromCode(uint32_t code, at::ScalarType &type) {
  for (const auto &e : kDtypes)
    if (e.code == code) {
      type = e.type;
      return true;
    }
  return false;
}

uint32_t blockChecksum(uint64_t block, const void *data, size_t bytes) {
  unsigned char index[8];
  std::memcpy(index, &block, 8); // little-endian (checked in format.h)
  return spill_io::crc32c(spill_io::crc32c(0, index, 8), data, bytes);
}

void encodeHeader(const FileHeader &h, void *block) {
  auto *p = static_cast<unsigned char *>(block);
  std::memset(p, 0, kHeaderBytes);
  std::memcpy(p, &h, sizeof h);
  const uint32_t crc = spill_io::crc32c(0, p, kHeaderCrcOffset);
  std::memcpy(p + kHeaderCrcOffset, &crc, 4);
}

std::string decodeHeader(const void *block, FileHeader &h) {
  const auto *p = static_cast<const unsigned char *>(block);
  std::memcpy(&h, p, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    return "not a hector feature store (no HECTORFS magic at the start)";
  uint32_t stored = 0;
  std::memcpy(&stored, p + kHeaderCrcOffset, 4);
  const uint32_t crc = spill_io::crc32c(0, p, kHeaderCrcOffset);
  if (crc != stored)
    return "the header's checksum does not match (the header is corrupt)";
  if (h.version != kVersion)
    return "format version " + std::to_string(h.version) + ", this runtime reads version " +
           std::to_string(kVersion);
  if (!(h.flags & kFlagComplete))
    return "the store was not completely written";
  at::ScalarType type;
  if (!dtypeFromCode(h.dtypeCode, type))
    return "unknown dtype code " + std::to_string(h.dtypeCode);
  if (h.headerBytes != kHeaderBytes || h.rowDims > kMaxRowDims ||
      h.elementBytes != c10::elementSize(type))
    return "inconsistent header (header size, row dimensions or element size)";
  uint64_t width = 1;
  for (uint32_t d = 0; d < h.rowDims; ++d)
    width *= h.rowShape[d];
  const uint64_t align = spill_io::kAlign;
  const bool ok = h.rowBytes == width * h.elementBytes && h.rowBytes > 0 && h.rowsPerBlock > 0 &&
                  h.blockStride % align == 0 && h.rowsPerBlock * h.rowBytes <= h.blockStride &&
                  h.numBlocks == (h.numRows + h.rowsPerBlock - 1) / h.rowsPerBlock &&
                  h.dataOffset == kHeaderBytes && h.checksumBytes == h.numBlocks * 4 &&
                  h.checksumOffset == h.dataOffset + h.numBlocks * h.blockStride &&
                  h.fileBytes == h.checksumOffset + spill_io::align_up(h.checksumBytes);
  if (!ok)
    return "inconsistent header (row, block and file sizes disagree)";
  return "";
}

std::string rowShapeText(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? " x " : "") + std::to_string(shape[i]);
  return s;
}

} // namespace hector::fs
