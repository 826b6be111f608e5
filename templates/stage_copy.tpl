@ -- stage_copy.tpl: asynchronous copies from global into shared memory (cp.async on
@ -- sm_80 and newer, plain loads before), for the templates that stage a time block of
@ -- their inputs one block ahead of the computation. Each copy moves `stage.copy_bytes`
@ -- (16, or 8 or 4 when a block's row is that short); needs elem_t and the global
@ -- `stage` of stage_tasks.tpl.
@ local common = import("scan_common")
@ local size = common.element_size(variant.dtype)
@ local BYTES = stage.copy_bytes
@ local EPC = BYTES // size

/* Copies the $(BYTES) bytes at src (fewer when `valid` elements remain; zeros after) into
 * dst: asynchronously on sm_80 and newer when the whole copy lies in the sequence, in one
 * piece when the row is $(BYTES)-byte aligned; with WORDS, in 4-byte pieces when the
 * source is only 4-byte aligned (rows whose length is not a whole number of copies, as
 * L = 196 in bf16 or 49 in fp32, start off alignment on most channels;
 * docs/design-row-alignment.md). Otherwise, and for a partial copy, plain loads:
 * cp.async with a shorter source becomes one full copy with zero fill, which
 * compute-sanitizer's memcheck counts as a read past the end of the tensor. WORDS is a
 * module of its own (the variant's words=1, set for such calls) so that the kernels for
 * aligned rows stay as they were: the pieces' code shifts their register allocation. */
#if __CUDA_ARCH__ >= 800
/* One whole copy, asynchronously: src is $(BYTES)-byte aligned and all of it in the sequence. */
__device__ __forceinline__ void copy_async(elem_t *dst, const elem_t *src) {
  const unsigned to = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.$(BYTES == 16 and "cg" or "ca").shared.global [%0], [%1], $(BYTES);\n" ::"r"(to), "l"(src));
}
#endif

template <bool WORDS> __device__ __forceinline__ void copy_chunk(elem_t *dst, const elem_t *src, int valid, bool aligned) {
#if __CUDA_ARCH__ >= 800
  if (aligned && valid >= $(EPC)) {
    copy_async(dst, src);
    return;
  }
@ if BYTES > 4 then
@   local pieces = {}
@   for k = 0, BYTES // 4 - 1 do pieces[#pieces + 1] = string.format("cp.async.ca.shared.global [%%0+%d], [%%1+%d], 4;\\n", 4 * k, 4 * k) end
  if (WORDS && ((unsigned long long)src & 3) == 0 && valid >= $(EPC)) {
    const unsigned to = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("$(table.concat(pieces))" ::"r"(to), "l"(src));
    return;
  }
@ end
#endif
#pragma unroll
  for (int e = 0; e < $(EPC); e++) dst[e] = e < valid ? src[e] : (elem_t)0;
}

__device__ __forceinline__ void copies_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* Waits for all but the most recent group of copies. */
__device__ __forceinline__ void copies_wait_previous() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 1;\n" ::);
#endif
}
