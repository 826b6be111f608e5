@ -- step_io.tpl: a lane's share of a staged time block's steps, published. In the
@ -- `_states` templates each lane computes the per-step values (dt, dt*u, g) of
@ -- `step_io.steps` consecutive steps of its channel and publishes them for the channel's
@ -- other lanes; it reads its run of a staged row with dtype.tpl's load_run_aligned (the
@ -- rows are padded to whole copies and a run starts at a multiple of its length, so the
@ -- run is aligned), which needs `step_io.steps` in `run_lengths`. Needs the global
@ -- `step_io` = { steps = steps a lane }.
@ local Q = step_io.steps

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
