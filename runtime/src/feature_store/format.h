//===- format.h - The feature store's file format (internal) ---*- C++ -*-===//
//
// A store file, all integers little-endian, every offset a multiple of 4096:
//
//   [0, 4096)                  header (FileHeader), its own CRC32C in the last 4 bytes
//   [4096, checksumOffset)     numBlocks row blocks of blockStride bytes each: rowsPerBlock rows
//                              packed from the block's start (the last block may hold fewer),
//                              zero padding after them
//   [checksumOffset, fileBytes) the checksum table: numBlocks uint32 CRC32C, zero padding
//
// The CRC32C of block b covers its 8-byte little-endian index b followed by its rows' bytes (not
// the padding), so a block read from the wrong place fails too. The header is written last, so
// a file without a valid header is never a store.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hector::fs {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the store format is little-endian");

constexpr char kMagic[8] = {'H', 'E', 'C', 'T', 'O', 'R', 'F', 'S'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 4096;
constexpr uint32_t kMaxRowDims = 8;
constexpr uint32_t kFlagComplete = 1;

/// The header's fields, in file order (offsets in the comments).
struct FileHeader {
  char magic[8];                  // 0
  uint32_t version;               // 8
  uint32_t headerBytes;           // 12
  uint32_t dtypeCode;             // 16 (dtypeCode())
  uint32_t elementBytes;          // 20
  uint32_t rowDims;               // 24
  uint32_t flags;                 // 28 (kFlagComplete)
  uint64_t rowShape[kMaxRowDims]; // 32
  uint64_t numRows;               // 96
  uint64_t rowBytes;              // 104
  uint64_t rowsPerBlock;          // 112
  uint64_t blockStride;           // 120
  uint64_t numBlocks;             // 128
  uint64_t dataOffset;            // 136
  uint64_t checksumOffset;        // 144
  uint64_t checksumBytes;         // 152 (numBlocks * 4)
  uint64_t fileBytes;             // 160
  uint32_t checksumTableCrc;      // 168: CRC32C of the numBlocks * 4 table bytes
  uint32_t reserved0;             // 172
  uint8_t uuid[16];               // 176
};
static_assert(sizeof(FileHeader) == 192, "header layout");
/// The header's CRC32C (of bytes [0, kHeaderCrcOffset)) sits at the end of its block.
constexpr size_t kHeaderCrcOffset = kHeaderBytes - 4;

/// The format's code of a dtype (0 for dtypes it cannot hold) and its inverse.
uint32_t dtypeCode(at::ScalarType type);
bool dtypeFromCode(uint32_t code, at::ScalarType &type);

/// The CRC32C of row block `block` holding `bytes` bytes of rows at `data`.
uint32_t blockChecksum(uint64_t block, const void *data, size_t bytes);

/// Serialises `h` into a 4096-byte block (zero-filled, with the header CRC).
void encodeHeader(const FileHeader &h, void *block);
/// Parses and checks a header block; returns "" or what is wrong with it.
std::string decodeHeader(const void *block, FileHeader &h);

/// The shape of a row as a string ("64" or "4 x 16", "scalar" for a 1-D table).
std::string rowShapeText(const std::vector<int64_t> &shape);

} // namespace hector::fs
