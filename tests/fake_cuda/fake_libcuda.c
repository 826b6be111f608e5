/* fake_libcuda.c: a pretend CUDA driver, for tests of host-side control flow on machines
 * without a GPU (load it with SCANFORGE_CUDA_LIBRARY). It defines the entry points that
 * runtime/cuda/cuda_driver.c resolves, under the names cuda.h maps them to. Device memory is
 * host memory (allocations above 64 MiB fail, so a bandwidth probe stays small), kernels
 * do nothing, events read the host's clock, one device: "Fake GPU" with 80 GiB, cc 9.0, 132
 * SMs ($FAKE_CUDA_NAME and $FAKE_CUDA_MEMORY_BYTES name another, so that a tuning file's
 * section for that GPU applies: bench/warm_for_rows.sh). A
 * function's static shared memory is read from its cubin's ELF sections, and the blocks an
 * SM holds follow from it as on an H100 (228 KiB an SM, 1 KiB reserved a block); registers
 * are counted only under $FAKE_CUDA_REGISTERS (read from the cubin's .nv.info, allocated as
 * on an H100). Module globals are the cubin's object symbols, with their sizes.
 * Nothing it "computes" means anything: only that calls were made in a valid order with
 * valid arguments. $FAKE_CUDA_REPORT set: launches and live allocations printed at exit.
 * Tests may read, through dlsym, the kernels launched, the memsets made and the failed
 * lookups of module globals since they last cleared the journal (fake_cuda_journal_*, at
 * the end of this file). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <cuda.h>
#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cuda/dynamic_shared.h" /* the convention only: this library links nothing of scanforge */

enum { MAX_ALLOC = 64 << 20 };

static __thread CUcontext current;
static int primary_context;
static long launches, live_allocations;
/* The journal: each launch's kernel name in order, the memsets, and the lookups of module
 * globals that failed (an API error compute-sanitizer reports), since the last clear. */
enum { JOURNAL_MAX = 64 };
static char journal[JOURNAL_MAX][128];
static int journal_count;
static long journal_memsets, journal_failed_lookups;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void *at(CUdeviceptr p) { return (void *)(uintptr_t)p; }

CUresult CUDAAPI cuInit(unsigned int flags) { return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult CUDAAPI cuDriverGetVersion(int *version) {
  *version = 13000;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult error, const char **name) {
  *name = error == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult error, const char **text) {
  *text = error == CUDA_SUCCESS ? "no error" : "an error of the pretend driver";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult CUDAAPI cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char *name, int length, CUdevice device) {
  const char *as = getenv("FAKE_CUDA_NAME");
  snprintf(name, (size_t)length, "%s", as && *as ? as : "Fake GPU");
  return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice device) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 60 << 20; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 48 << 10; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 227 << 10; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 228 << 10; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *value = 3201000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = 6144; break;
    default: *value = 1; break;
  }
  return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice device) {
  const char *as = getenv("FAKE_CUDA_MEMORY_BYTES");
  const unsigned long long asked = as ? strtoull(as, NULL, 10) : 0;
  *bytes = asked ? (size_t)asked : (size_t)80 << 30;
  return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  *context = (CUcontext)&primary_context;
  return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) { return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *context) {
  *context = current;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  current = context;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  *device = 0;
  return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuCtxSynchronize(void) { return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }

/* FAKE_CUDA_REGISTERS set: kernels report the registers and local memory their cubins
 * give, and registers limit the blocks an SM as on an H100 (a kernel's register cap then
 * changes its occupancy as on a GPU). Unset: 64 registers, no local memory, shared memory
 * alone limits (what most tests of the pretend driver were written against). */
static bool with_registers(void) { return getenv("FAKE_CUDA_REGISTERS") != NULL; }

/* A module: the functions asked for, with the static shared memory of each in its cubin. */
enum { MAX_FUNCTIONS = 8 };
typedef struct fake_function {
  char name[128];
  int shared_bytes;
  size_t dynamic_bytes; /* what its module declares every launch passes (runtime/cuda/dynamic_shared.h) */
  int max_dynamic;      /* what a launch may pass: 48 KiB less the static, until opted in to more */
  int registers;        /* a thread's, from the cubin (0: unknown) */
  int frame_bytes;      /* a thread's local memory (spills and stack), from the cubin */
} fake_function;
typedef struct fake_module {
  int count;
  fake_function functions[MAX_FUNCTIONS];
  char shared_names[MAX_FUNCTIONS][128]; /* ".nv.shared.<kernel>" sections: kernel and size */
  int shared_sizes[MAX_FUNCTIONS], shared_count;
  char global_names[MAX_FUNCTIONS][128]; /* object symbols in global memory: name and size */
  size_t global_sizes[MAX_FUNCTIONS];
  int global_count;
  char info_names[MAX_FUNCTIONS][128]; /* ".nv.info" records: kernel, registers, frame */
  int info_registers[MAX_FUNCTIONS], info_frames[MAX_FUNCTIONS], info_count;
} fake_module;

/* The object symbols of an ELF64 cubin in its ".nv.global" sections (the __device__
 * variables cuModuleGetGlobal finds). */
static void read_globals(const unsigned char *image, const Elf64_Ehdr *header, fake_module *m) {
  Elf64_Shdr names;
  memcpy(&names, image + header->e_shoff + (size_t)header->e_shstrndx * sizeof names, sizeof names);
  for (int i = 0; i < header->e_shnum; i++) {
    Elf64_Shdr symtab, strtab;
    memcpy(&symtab, image + header->e_shoff + (size_t)i * sizeof symtab, sizeof symtab);
    if (symtab.sh_type != SHT_SYMTAB || symtab.sh_entsize != sizeof(Elf64_Sym)) continue;
    memcpy(&strtab, image + header->e_shoff + (size_t)symtab.sh_link * sizeof strtab, sizeof strtab);
    for (size_t k = 0; k < symtab.sh_size / sizeof(Elf64_Sym) && m->global_count < MAX_FUNCTIONS; k++) {
      Elf64_Sym sym;
      memcpy(&sym, image + symtab.sh_offset + k * sizeof sym, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= header->e_shnum)
        continue;
      Elf64_Shdr in;
      memcpy(&in, image + header->e_shoff + (size_t)sym.st_shndx * sizeof in, sizeof in);
      if (strncmp((const char *)image + names.sh_offset + in.sh_name, ".nv.global", 10) != 0) continue;
      snprintf(m->global_names[m->global_count], sizeof m->global_names[0], "%s",
               (const char *)image + strtab.sh_offset + sym.st_name);
      m->global_sizes[m->global_count++] = sym.st_size;
    }
  }
}

/* The name of symbol `index` of an ELF64 cubin's symbol table, or NULL. */
static const char *symbol_name(const unsigned char *image, const Elf64_Ehdr *header, uint32_t index) {
  for (int i = 0; i < header->e_shnum; i++) {
    Elf64_Shdr symtab, strtab;
    memcpy(&symtab, image + header->e_shoff + (size_t)i * sizeof symtab, sizeof symtab);
    if (symtab.sh_type != SHT_SYMTAB || symtab.sh_entsize != sizeof(Elf64_Sym)) continue;
    if (index >= symtab.sh_size / sizeof(Elf64_Sym)) return NULL;
    memcpy(&strtab, image + header->e_shoff + (size_t)symtab.sh_link * sizeof strtab, sizeof strtab);
    Elf64_Sym sym;
    memcpy(&sym, image + symtab.sh_offset + (size_t)index * sizeof sym, sizeof sym);
    return (const char *)image + strtab.sh_offset + sym.st_name;
  }
  return NULL;
}

/* Each kernel's registers and frame (local memory a thread) from an ELF64 cubin's
 * ".nv.info" section: records of a format byte, an attribute byte and, for the sized
 * format (4), a 16-bit length and that many bytes; EIATTR_REGCOUNT (0x2f) and
 * EIATTR_FRAME_SIZE (0x11) hold a symbol index and a value. */
static void read_register_counts(const unsigned char *image, const Elf64_Ehdr *header, fake_module *m) {
  Elf64_Shdr names;
  memcpy(&names, image + header->e_shoff + (size_t)header->e_shstrndx * sizeof names, sizeof names);
  for (int i = 0; i < header->e_shnum; i++) {
    Elf64_Shdr info;
    memcpy(&info, image + header->e_shoff + (size_t)i * sizeof info, sizeof info);
    if (strcmp((const char *)image + names.sh_offset + info.sh_name, ".nv.info") != 0) continue;
    const unsigned char *record = image + info.sh_offset, *end = record + info.sh_size;
    while (record + 4 <= end && record[0] == 0x04) {
      uint16_t length;
      uint32_t symbol, value;
      memcpy(&length, record + 2, sizeof length);
      if (record + 4 + length > end) break;
      if ((record[1] == 0x2f || record[1] == 0x11) && length == 8) {
        memcpy(&symbol, record + 4, sizeof symbol);
        memcpy(&value, record + 8, sizeof value);
        const char *name = symbol_name(image, header, symbol);
        int k = 0;
        while (name && k < m->info_count && strcmp(m->info_names[k], name) != 0) k++;
        if (name && k == m->info_count && k < MAX_FUNCTIONS)
          snprintf(m->info_names[m->info_count++], sizeof m->info_names[0], "%s", name);
        if (name && k < m->info_count) *(record[1] == 0x2f ? &m->info_registers[k] : &m->info_frames[k]) = (int)value;
      }
      record += 4 + length;
    }
  }
}

/* The sizes of the ".nv.shared.<kernel>" sections of an ELF64 cubin (a PTX image has none). */
static void read_shared_sections(const unsigned char *image, fake_module *m) {
  if (memcmp(image, ELFMAG, SELFMAG) != 0 || image[EI_CLASS] != ELFCLASS64) return;
  Elf64_Ehdr header; /* copied out: the image need not be aligned */
  memcpy(&header, image, sizeof header);
  Elf64_Shdr names;
  memcpy(&names, image + header.e_shoff + (size_t)header.e_shstrndx * sizeof names, sizeof names);
  for (int i = 0; i < header.e_shnum && m->shared_count < MAX_FUNCTIONS; i++) {
    Elf64_Shdr section;
    memcpy(&section, image + header.e_shoff + (size_t)i * sizeof section, sizeof section);
    const char *name = (const char *)image + names.sh_offset + section.sh_name;
    if (strncmp(name, ".nv.shared.", 11) != 0) continue;
    snprintf(m->shared_names[m->shared_count], sizeof m->shared_names[0], "%s", name + 11);
    /* An sm_90 cubin's section holds the 1 KiB the driver reserves a block (ptxas reports
     * 37120 bytes smem where the section has 38144; sm_80's sections hold ptxas' number):
     * the function's own shared memory is the rest (e_flags bits 8-15: the SM), and the
     * occupancy adds the reserve once, as the driver does. */
    const int reserve = (header.e_flags >> 8 & 0xff) >= 90 && section.sh_size >= 1024 ? 1024 : 0;
    m->shared_sizes[m->shared_count++] = (int)section.sh_size - reserve;
  }
  read_globals(image, &header, m);
  read_register_counts(image, &header, m);
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  if (!image) return CUDA_ERROR_INVALID_VALUE;
  fake_module *m = calloc(1, sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  read_shared_sections(image, m);
  *module = (CUmodule)m;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int count, CUjit_option *options,
                                    void **values) {
  (void)count, (void)options, (void)values;
  return cuModuleLoadData(module, image);
}
CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  free(module);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  if (!module || !name) return CUDA_ERROR_INVALID_VALUE;
  fake_module *m = (fake_module *)module;
  for (int i = 0; i < m->count; i++)
    if (strcmp(m->functions[i].name, name) == 0) return *function = (CUfunction)&m->functions[i], CUDA_SUCCESS;
  if (m->count == MAX_FUNCTIONS) return CUDA_ERROR_OUT_OF_MEMORY;
  fake_function *f = &m->functions[m->count++];
  snprintf(f->name, sizeof f->name, "%s", name);
  for (int i = 0; i < m->shared_count; i++)
    if (strcmp(m->shared_names[i], name) == 0) f->shared_bytes = m->shared_sizes[i];
  for (int i = 0; i < m->info_count; i++)
    if (strcmp(m->info_names[i], name) == 0) f->registers = m->info_registers[i], f->frame_bytes = m->info_frames[i];
  /* The templates' combine, zero and finalize kernels keep their arrays static
   * (templates/carry_combine.tpl, bwd_sums.tpl): only the others would fault with less than
   * the module declares. */
  const size_t length = strlen(name);
  const bool static_only = (length > 8 && strcmp(name + length - 8, "_combine") == 0) ||
                           (length > 5 && strcmp(name + length - 5, "_zero") == 0) ||
                           (length > 9 && strcmp(name + length - 9, "_finalize") == 0);
  for (int i = 0; i < m->global_count && !static_only; i++)
    if (strcmp(m->global_names[i], SF_DYNAMIC_SHARED_SYMBOL) == 0)
      f->dynamic_bytes = m->global_sizes[i] * SF_DYNAMIC_SHARED_UNIT;
  f->max_dynamic = (48 << 10) - f->shared_bytes;
  *function = (CUfunction)f;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr *ptr, size_t *bytes, CUmodule module, const char *name) {
  static unsigned char storage[64]; /* what a pointer to any global points at: nothing reads it */
  if (!module || !name) return CUDA_ERROR_INVALID_VALUE;
  const fake_module *m = (const fake_module *)module;
  for (int i = 0; i < m->global_count; i++)
    if (strcmp(m->global_names[i], name) == 0) {
      if (ptr) *ptr = (CUdeviceptr)(uintptr_t)storage;
      if (bytes) *bytes = m->global_sizes[i];
      return CUDA_SUCCESS;
    }
  journal_failed_lookups++;
  return CUDA_ERROR_NOT_FOUND;
}
CUresult CUDAAPI cuFuncGetAttribute(int *value, CUfunction_attribute attribute, CUfunction function) {
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = function && with_registers() && ((fake_function *)function)->registers ? ((fake_function *)function)->registers : 64;
      break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *value = function && with_registers() ? ((fake_function *)function)->frame_bytes : 0;
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = function ? ((fake_function *)function)->shared_bytes : 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = function ? ((fake_function *)function)->max_dynamic : 0; break;
    default: *value = 0; break;
  }
  return function ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  if (!function) return CUDA_ERROR_INVALID_HANDLE;
  fake_function *f = (fake_function *)function;
  if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || value + f->shared_bytes > (227 << 10)) return CUDA_ERROR_INVALID_VALUE;
    f->max_dynamic = value;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction function, int block_size,
                                                             size_t dynamic_shared) {
  if (!blocks || !function || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  const int by_threads = 2048 / block_size;
  const int by_shared = (228 << 10) / (((fake_function *)function)->shared_bytes + (int)dynamic_shared + 1024);
  *blocks = by_threads < by_shared ? by_threads : by_shared;
  const int registers = ((fake_function *)function)->registers;
  if (with_registers() && registers > 0) {
    /* as an H100 allocates them: 256 registers a warp at a time, 16384 in each of an SM's
     * four schedulers, a block's warps spread over the four */
    const int per_warp = (registers * 32 + 255) / 256 * 256;
    const int warps = (block_size + 31) / 32, by_registers = 4 * (16384 / per_warp) / warps;
    if (by_registers < *blocks) *blocks = by_registers;
  }
  if (*blocks > 32) *blocks = 32;
  return CUDA_SUCCESS;
}
/* Launches are checked against the limits of a real GPU, then counted. A kernel launched
 * with less dynamic shared memory than its module declares would fault: refused here. */
CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                                unsigned int block_x, unsigned int block_y, unsigned int block_z,
                                unsigned int shared_bytes, CUstream stream, void **params, void **extra) {
  (void)stream, (void)extra;
  if (!function || (!params && !extra) || !grid_x || !grid_y || !grid_z || !block_x || !block_y || !block_z ||
      (unsigned long long)block_x * block_y * block_z > 1024 || grid_y > 65535 || grid_z > 65535 ||
      shared_bytes > (unsigned)((fake_function *)function)->max_dynamic ||
      shared_bytes < ((fake_function *)function)->dynamic_bytes)
    return CUDA_ERROR_INVALID_VALUE;
  launches++;
  if (journal_count < JOURNAL_MAX)
    snprintf(journal[journal_count++], sizeof journal[0], "%s", ((fake_function *)function)->name);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void *memory = bytes <= MAX_ALLOC ? malloc(bytes) : NULL;
  if (!memory) return CUDA_ERROR_OUT_OF_MEMORY;
  live_allocations++;
  *ptr = (CUdeviceptr)(uintptr_t)memory;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr ptr) {
  if (ptr) live_allocations--;
  free(at(ptr));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  memcpy(at(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  memcpy(dst, at(src), bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  memmove(at(dst), at(src), bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  (void)stream;
  return cuMemcpyDtoD(dst, src, bytes);
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t count) {
  journal_memsets++;
  memset(at(dst), value, count);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t count) {
  journal_memsets++;
  unsigned int *p = at(dst);
  for (size_t i = 0; i < count; i++) p[i] = value;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) {
  (void)stream;
  return cuMemsetD8(dst, value, count);
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream) {
  (void)stream;
  return cuMemsetD32(dst, value, count);
}
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *ptr, size_t bytes, CUstream stream) {
  (void)stream;
  return cuMemAlloc(ptr, bytes);
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr ptr, CUstream stream) {
  (void)stream;
  return cuMemFree(ptr);
}
/* One default pool; its release threshold is the only attribute set (bench --keep-pool). */
static unsigned long long pool_release_threshold;
static int pool_handle;
CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice device) {
  if (!pool || device != 0) return CUDA_ERROR_INVALID_VALUE;
  *pool = (CUmemoryPool)&pool_handle;
  return CUDA_SUCCESS;
}
/* Pools scanforge creates (its workspace pool): a block each, allocations as cuMemAlloc. */
struct fake_pool { unsigned magic; };
enum { FAKE_POOL_MAGIC = 0x5f9001u };
static long pools_alive, pool_allocations;
static unsigned long long created_pool_threshold;
static int is_created_pool(CUmemoryPool pool) {
  return pool && pool != (CUmemoryPool)&pool_handle && ((struct fake_pool *)pool)->magic == FAKE_POOL_MAGIC;
}
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute, void *value) {
  if ((pool != (CUmemoryPool)&pool_handle && !is_created_pool(pool)) || !value) return CUDA_ERROR_INVALID_VALUE;
  if (attribute != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) return CUDA_ERROR_NOT_SUPPORTED;
  if (pool == (CUmemoryPool)&pool_handle) pool_release_threshold = *(const unsigned long long *)value;
  else created_pool_threshold = *(const unsigned long long *)value;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
  if (!pool || !props || props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id != 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct fake_pool *p = malloc(sizeof *p);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  p->magic = FAKE_POOL_MAGIC;
  pools_alive++;
  *pool = (CUmemoryPool)p;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  if (!is_created_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
  ((struct fake_pool *)pool)->magic = 0;
  pools_alive--;
  free(pool);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *ptr, size_t bytes, CUmemoryPool pool, CUstream stream) {
  (void)stream;
  if (!is_created_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
  pool_allocations++;
  return cuMemAlloc(ptr, bytes);
}
/* Every pointer is device memory, none managed. */
CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  (void)ptr;
  *(unsigned int *)data = attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE ? CU_MEMORYTYPE_DEVICE : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int flags) {
  (void)flags;
  *stream = malloc(16);
  return *stream ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  free(stream);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  (void)stream;
  return CUDA_SUCCESS;
}

/* An event holds the host time it was recorded at. */
CUresult CUDAAPI cuEventCreate(CUevent *event, unsigned int flags) {
  (void)flags;
  *event = calloc(1, sizeof(double));
  return *event ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  (void)stream;
  *(double *)(void *)event = now_ms();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventSynchronize(CUevent event) { return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  double t = *(double *)(void *)end - *(double *)(void *)start;
  *ms = (float)(t > 1e-4 ? t : 1e-4);
  return CUDA_SUCCESS;
}
#ifdef cuEventElapsedTime /* cuda.h maps it to _v2 (CUDA 12.8 on): the old name too */
#undef cuEventElapsedTime
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end);
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) { return cuEventElapsedTime_v2(ms, start, end); }
#endif
CUresult CUDAAPI cuEventDestroy(CUevent event) {
  free(event);
  return CUDA_SUCCESS;
}

__attribute__((destructor)) static void report(void) {
  if (getenv("FAKE_CUDA_REPORT"))
    fprintf(stderr, "fake cuda: %ld launches, %ld live allocations at exit%s; %ld allocations from created pools "
            "(threshold %llu), %ld pools alive\n", launches, live_allocations,
            pool_release_threshold == ~0ull ? ", default pool kept" : "", pool_allocations, created_pool_threshold,
            pools_alive);
}

/* The journal, for tests (dlsym): cleared; the name of the i-th kernel launched since (NULL
 * past the last, or past the JOURNAL_MAX kept); the memsets since; the failed lookups of
 * module globals since. */
void fake_cuda_journal_clear(void) { journal_count = 0, journal_memsets = 0, journal_failed_lookups = 0; }
const char *fake_cuda_journal_launch(int i) { return i >= 0 && i < journal_count ? journal[i] : NULL; }
long fake_cuda_journal_memsets(void) { return journal_memsets; }
long fake_cuda_journal_failed_lookups(void) { return journal_failed_lookups; }
