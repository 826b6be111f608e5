@ -- dtype.tpl: the activation type T: storage type, conversions to and from fp32, and
@ -- loads/stores of a thread's run of consecutive elements (one overload per run length
@ -- in the global `run_lengths`, set by the including template; default: items). No
@ -- headers: fp16 and bf16 travel as 16-bit integers and convert with PTX, so the source
@ -- is self-contained.
@ local common = import("scan_common")
@ local dtype = variant.dtype
@ local size = common.element_size(dtype)
@ if dtype == "fp32" then
typedef float elem_t;
__device__ __forceinline__ float to_float(elem_t x) { return x; }
__device__ __forceinline__ elem_t from_float(float x) { return x; }
@ elseif dtype == "fp16" then
typedef unsigned short elem_t;
__device__ __forceinline__ float to_float(elem_t x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
  return f;
}
__device__ __forceinline__ elem_t from_float(float x) {
  elem_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
@ else
typedef unsigned short elem_t;
__device__ __forceinline__ float to_float(elem_t x) { return __uint_as_float(((unsigned int)x) << 16); }
__device__ __forceinline__ elem_t from_float(float x) {
#if __CUDA_ARCH__ >= 800
  elem_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
#else
  unsigned int bits = __float_as_uint(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (elem_t)((bits >> 16) | 0x40u); /* quiet NaN */
  bits += 0x7fffu + ((bits >> 16) & 1u); /* round to nearest even */
  return (elem_t)(bits >> 16);
#endif
}
@ end
/* Four consecutive fp32 values at `from` (16-byte aligned): one 16-byte load. */
__device__ __forceinline__ float4 load4_f32(const float *from) { return *reinterpret_cast<const float4 *>(from); }
@ if size == 2 then
/* Four 16-bit elements at `from` (8-byte aligned), as loaded: one 8-byte load. */
__device__ __forceinline__ uint2 load4_16(const elem_t *from) { return *reinterpret_cast<const uint2 *>(from); }
/* Four 16-bit elements at `from` (8-byte aligned) as fp32: one 8-byte load. */
__device__ __forceinline__ float4 load4_f32(const elem_t *from) {
  const uint2 w = load4_16(from);
  return make_float4(to_float((elem_t)(w.x & 0xffffu)), to_float((elem_t)(w.x >> 16)), to_float((elem_t)(w.y & 0xffffu)),
                     to_float((elem_t)(w.y >> 16)));
}
/* Those four elements as fp32 at `to` (16-byte aligned): one 16-byte store. */
__device__ __forceinline__ void store4_f32(uint2 w, float *to) {
  *reinterpret_cast<float4 *>(to) = make_float4(to_float((elem_t)(w.x & 0xffffu)), to_float((elem_t)(w.x >> 16)),
                                                to_float((elem_t)(w.y & 0xffffu)), to_float((elem_t)(w.y >> 16)));
}
@ end

@ for _, items in ipairs(run_lengths or { variant.items }) do
@ local vbytes = common.vector_bytes(items, size)
@ local vtype, words = common.vector_type(vbytes)
@ local per_vector = vbytes // size

/* Loads the $(items) elements p[0..$(items)) into x with $(vbytes)-byte loads; p must be
 * $(vbytes)-byte aligned (no test: a caller that knows it, such as a lane's run of a staged
 * row, keeps its code free of branches). */
__device__ __forceinline__ void load_run_aligned(const elem_t *p, float (&x)[$(items)]) {
  const $(vtype) *v = reinterpret_cast<const $(vtype) *>(p);
@ for k = 0, items // per_vector - 1 do
  {
    const $(vtype) w = v[$(k)];
@   if not words then
    x[$(k)] = to_float(w);
@   elseif size == 4 then
@     for j, field in ipairs(words) do
    x[$(k * per_vector + j - 1)] = __uint_as_float(w$(field ~= "" and "." .. field or ""));
@     end
@   else
@     for j, field in ipairs(words) do
@       local word = "w" .. (field ~= "" and "." .. field or "")
    x[$(k * per_vector + 2 * (j - 1))] = to_float((elem_t)($(word) & 0xffffu));
    x[$(k * per_vector + 2 * (j - 1) + 1)] = to_float((elem_t)($(word) >> 16));
@     end
@   end
  }
@ end
}

/* Loads the $(items) elements p[0..$(items)) into x; elements at or past `valid` read as
 * `fill`. Full, $(vbytes)-byte aligned runs take $(vbytes)-byte loads. */
__device__ __forceinline__ void load_run(const elem_t *p, int valid, float fill, float (&x)[$(items)]) {
  if (valid >= $(items) && ((unsigned long long)p % $(vbytes)) == 0) {
    load_run_aligned(p, x);
  } else {
#pragma unroll
    for (int i = 0; i < $(items); i++) x[i] = i < valid ? to_float(p[i]) : fill;
  }
}

/* Stores x[0..valid) to p[0..valid), with $(vbytes)-byte stores for full aligned runs. */
__device__ __forceinline__ void store_run(elem_t *p, int valid, const float (&x)[$(items)]) {
  if (valid >= $(items) && ((unsigned long long)p % $(vbytes)) == 0) {
    $(vtype) *v = reinterpret_cast<$(vtype) *>(p);
@ for k = 0, items // per_vector - 1 do
    {
      $(vtype) w;
@   if not words then
      w = from_float(x[$(k)]);
@   elseif size == 4 then
@     for j, field in ipairs(words) do
      w$(field ~= "" and "." .. field or "") = __float_as_uint(x[$(k * per_vector + j - 1)]);
@     end
@   else
@     for j, field in ipairs(words) do
      w$(field ~= "" and "." .. field or "") = (unsigned int)from_float(x[$(k * per_vector + 2 * (j - 1))]) |
          ((unsigned int)from_float(x[$(k * per_vector + 2 * (j - 1) + 1)]) << 16);
@     end
@   end
      v[$(k)] = w;
    }
@ end
  } else {
#pragma unroll
    for (int i = 0; i < $(items); i++)
      if (i < valid) p[i] = from_float(x[i]);
  }
}
@ end
