//===- library_file.cpp - Checking a model library before dlopen ----------===//
//
// dlopen() maps a shared object and trusts its headers: a truncated file faults (SIGBUS) in the
// dynamic loader when it touches a page past the end, and a foreign library runs its
// constructors. So hector.load and hector::loadLibrary first read the file's ELF headers with
// pread (no mapping) and check: an ELF shared object of this machine's class, byte order and
// architecture; every loaded segment, the program and section header tables and the section
// names inside the file; and the `.hector_abi` section that hectorc puts into every library it
// emits, holding "hectorc library abi N" for the ABI this runtime reads.
//
//===----------------------------------------------------------------------===//
#include "hector/model.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace hector {
namespace {


#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
constexpr const char *kMachineName = "x86-64";
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
constexpr const char *kMachineName = "aarch64";
#else
#error "hector: unknown machine for the library check"
#endif

struct File {
  int fd = -1;
  uint64_t size = 0;
  ~File() {
    if (fd >= 0)
      ::close(fd);
  }
  /// Reads exactly `n` bytes at `offset`, which the caller checked lie inside the file.
  bool read(void *buf, size_t n, uint64_t offset) const {
    auto *p = static_cast<char *>(buf);
    while (n > 0) {
      ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        return false;
      p += got;
      n -= static_cast<size_t>(got);
      offset += static_cast<uint64_t>(got);
    }
    return true;
  }
  /// Whether [offset, offset + n) lies inside the file (without overflow).
  bool holds(uint64_t offset, uint64_t n) const { return offset <= size && n <= size - offset; }
};

} // namespace

std::string checkLibraryFile(const std::string &path) {
  File file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0)
    return "cannot open " + path + ": " + std::strerror(errno);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0)
    return "cannot read " + path + ": " + std::strerror(errno);
  if (!S_ISREG(st.st_mode))
    return path + " is not a regular file";
  file.size = static_cast<uint64_t>(st.st_size);
  const std::string notOurs = path + " is not a library built by hectorc: ";
  if (file.size == 0)
    return notOurs + "the file is empty";
  Elf64_Ehdr eh{};
  if (file.size < sizeof(eh))
    return notOurs + "the file is too small for a shared library (" +
           std::to_string(file.size) + " bytes)";
  if (!file.read(&eh, sizeof(eh), 0))
    return "cannot read " + path + ": " + std::strerror(errno ? errno : EIO);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return notOurs + "not an ELF file";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_machine != kMachine)
    return notOurs + "an ELF file for another machine (this one is 64-bit little-endian " +
           kMachineName + ")";
  if (eh.e_type != ET_DYN)
    return notOurs + "an ELF file that is not a shared library";
  const std::string truncated = path + " is truncated or damaged (" + std::to_string(file.size) +
                                " bytes): ";
  // Program headers and the segments the loader maps.
  if (eh.e_phnum == 0 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
      !file.holds(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr)))
    return truncated + "its program headers lie outside the file";
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!file.read(ph.data(), ph.size() * sizeof(Elf64_Phdr), eh.e_phoff))
    return truncated + "cannot read its program headers";
  for (const Elf64_Phdr &p : ph)
    if ((p.p_type == PT_LOAD || p.p_type == PT_DYNAMIC) && !file.holds(p.p_offset, p.p_filesz))
      return truncated + "a segment ends at byte " + std::to_string(p.p_offset + p.p_filesz);
  // Section headers, their names, and the ABI marker.
  if (eh.e_shnum == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum ||
      !file.holds(eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr)))
    return truncated + "its section headers lie outside the file";
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (!file.read(sh.data(), sh.size() * sizeof(Elf64_Shdr), eh.e_shoff))
    return truncated + "cannot read its section headers";
  const Elf64_Shdr &names = sh[eh.e_shstrndx];
  if (names.sh_type != SHT_STRTAB || !file.holds(names.sh_offset, names.sh_size) ||
      names.sh_size > (64u << 20))
    return truncated + "its section names lie outside the file";
  std::string strtab(names.sh_size, '\0');
  if (!file.read(strtab.data(), strtab.size(), names.sh_offset))
    return truncated + "cannot read its section names";
  for (const Elf64_Shdr &s : sh)
    if (s.sh_type != SHT_NOBITS && s.sh_type != SHT_NULL && !file.holds(s.sh_offset, s.sh_size))
      return truncated + "a section ends at byte " + std::to_string(s.sh_offset + s.sh_size);
  for (const Elf64_Shdr &s : sh) {
    if (s.sh_name >= strtab.size() || std::strcmp(strtab.c_str() + s.sh_name, kAbiSection) != 0)
      continue;
    if (s.sh_type == SHT_NOBITS || s.sh_size > 4096)
      return truncated + "its " + kAbiSection + " section is malformed";
    std::string marker(s.sh_size, '\0');
    if (!file.read(marker.data(), marker.size(), s.sh_offset))
      return truncated + "cannot read its " + kAbiSection + " section";
    marker.resize(std::strlen(marker.c_str()));
    const std::string prefix = kAbiPrefix;
    if (marker.compare(0, prefix.size(), prefix) != 0)
      return notOurs + "its " + kAbiSection + " section does not hold a hectorc ABI marker";
    const std::string version = marker.substr(prefix.size());
    if (version != std::to_string(kLibraryAbi))
      return path + " was built by a hectorc for library ABI " + version +
             ", and this runtime reads ABI " + std::to_string(kLibraryAbi) +
             ": rebuild the model with this hectorc";
    return "";
  }
  return notOurs + "it has no hectorc ABI marker (a " + kAbiSection +
         " section); build the model with this hectorc";
}

} // namespace hector
