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
 * dst: asynchronously on sm_80 and newer when the row is $(BYTES)-byte aligned and the
 * whole copy lies in the sequence. A partial copy takes the plain loads: cp.async with a
 * shorter source becomes one $(BYTES)-byte copy with zero fill, which compute-sanitizer's
 * memcheck counts as a $(BYTES)-byte read past the end of the tensor. */
__device__ __forceinline__ void copy_chunk(elem_t *dst, const elem_t *src, int valid, bool aligned) {
#if __CUDA_ARCH__ >= 800
  if (aligned && valid >= $(EPC)) {
    const unsigned to = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.$(BYTES == 16 and "cg" or "ca").shared.global [%0], [%1], $(BYTES);\n" ::"r"(to), "l"(src));
    return;
  }
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
