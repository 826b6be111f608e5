@ -- step_io.tpl: a lane's share of a staged time block's steps, read and published. In
@ -- the `_states` templates each lane computes the per-step values (dt, dt*u, g) of
@ -- `step_io.steps` consecutive steps of its channel and publishes them for the channel's
@ -- other lanes. Needs elem_t (dtype.tpl) and the global `step_io` = { steps = steps a
@ -- lane, copy_elems = elements of one staging copy }.
@ local common = import("scan_common")
@ local size = common.element_size(variant.dtype)
@ local Q = step_io.steps
@ -- staged rows are padded to whole copies and a lane's run starts at a multiple of Q, so
@ -- runs of up to one copy (and at most 16 bytes) start aligned
@ local step_bytes = math.min(Q * size, step_io.copy_elems * size, 16)
@ local step_type, step_words = common.vector_type(step_bytes)
@ local per_load = step_bytes // size

/* My $(Q) consecutive steps of a staged row as fp32, $(step_bytes) bytes a load. */
__device__ __forceinline__ void load_steps(const elem_t *p, float (&x)[$(Q)]) {
@ for k = 0, Q // per_load - 1 do
  {
    const $(step_type) w = reinterpret_cast<const $(step_type) *>(p)[$(k)];
@   if not step_words then
    x[$(k)] = to_float(w);
@   elseif size == 4 then
@     for j, field in ipairs(step_words) do
    x[$(k * per_load + j - 1)] = __uint_as_float(w$(field ~= "" and "." .. field or ""));
@     end
@   else
@     for j, field in ipairs(step_words) do
@       local word = "w" .. (field ~= "" and "." .. field or "")
    x[$(k * per_load + 2 * (j - 1))] = to_float((elem_t)($(word) & 0xffffu));
    x[$(k * per_load + 2 * (j - 1) + 1)] = to_float((elem_t)($(word) >> 16));
@     end
@   end
  }
@ end
}

@ local put_floats = math.min(Q, 4)
@ local put_type = ({ [1] = "float", [2] = "float2", [4] = "float4" })[put_floats]
/* My $(Q) steps' values into a row of fp32 step values (rows of a multiple of 4 floats,
 * 16-byte aligned), $(put_floats * 4) bytes a store. */
__device__ __forceinline__ void store_steps(float *p, const float (&x)[$(Q)]) {
@ for k = 0, Q // put_floats - 1 do
@   if put_floats == 1 then
  p[$(k)] = x[$(k)];
@   else
@     local parts = {}
@     for j = 1, put_floats do parts[j] = string.format("x[%d]", k * put_floats + j - 1) end
  reinterpret_cast<$(put_type) *>(p)[$(k)] = make_$(put_type)($(table.concat(parts, ", ")));
@   end
@ end
}
