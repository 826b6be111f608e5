-- shared_layout.lua: where a split=state kernel's shared-memory arrays live
-- (import("shared_layout"); docs/design-dynamic-shared.md).
--
-- A template lists its arrays once. Up to 48 KB (what a kernel may declare statically)
-- they are `__shared__` arrays of the kernel body; above, one struct in dynamic shared
-- memory that every entry point of the module shares. The module then declares the
-- struct's size as the size of the device global sf_dynamic_shared_16 (in units of 16
-- bytes: runtime/cuda/dynamic_shared.h), which the runtime reads when it loads the module
-- and passes at every launch.
local M = {}

M.STATIC_MAX = 48 * 1024   -- the most a kernel may declare statically
M.DYNAMIC_MAX = 227 * 1024 -- the most a block may opt in to (sm_90); smaller GPUs refuse at load
M.SM_BYTES = 228 * 1024    -- an sm_90 SM's shared memory (runtime/compile/occupancy.c)
M.BLOCK_RESERVE = 1024     -- bytes the driver reserves a block
M.SHARED_UNIT = 128        -- a block takes shared memory in units of this many bytes

-- A new, empty list of arrays.
function M.new()
  return { arrays = {} }
end

-- Adds an array: its C type, name, dimensions ("[2][8]"), bytes and a comment (`what`).
-- Fields a template adds for its own counts (such as `staging`) stay on the entry.
function M.add(layout, entry)
  table.insert(layout.arrays, entry)
end

-- The array named `name`, or nil.
function M.find(layout, name)
  for _, a in ipairs(layout.arrays) do
    if a.name == name then return a end
  end
  return nil
end

-- The blocks of `bytes` of shared memory one sm_90 SM holds, for choices that must not
-- cost a block an SM.
function M.blocks_an_sm(bytes)
  local unit = M.SHARED_UNIT
  return M.SM_BYTES // ((bytes + M.BLOCK_RESERVE + unit - 1) // unit * unit)
end

-- The bytes of the arrays `keep` accepts (every array without it).
function M.bytes(layout, keep)
  local total = 0
  for _, a in ipairs(layout.arrays) do
    if not keep or keep(a) then total = total + a.bytes end
  end
  return total
end

-- Module scope, dynamic layouts only: the struct `name`, the check of the template's count
-- against the compiler's, and the size the runtime reads.
function M.module_declarations(layout, name)
  local total = 0
  for _, a in ipairs(layout.arrays) do total = total + (a.bytes + 15) // 16 * 16 end
  local out = {
    "/* Every entry point's arrays, in dynamic shared memory. Each launch passes their size,",
    " * which the runtime reads from the module as the size of sf_dynamic_shared_16 (in bytes,",
    " * times 16: runtime/cuda/dynamic_shared.h) when it loads it. */",
    "struct " .. name .. " {",
  }
  for _, a in ipairs(layout.arrays) do
    out[#out + 1] = string.format("  __align__(16) %s %s%s;", a.type, a.name, a.dims)
  end
  out[#out + 1] = "};"
  out[#out + 1] = string.format("static_assert(sizeof(%s) == %d, \"the template's count of the arrays' bytes\");", name, total)
  out[#out + 1] = "extern __shared__ __align__(16) unsigned char sf_dynamic_smem[];"
  out[#out + 1] = string.format("extern \"C\" { __device__ unsigned char sf_dynamic_shared_16[%d]; }", total // 16)
  return table.concat(out, "\n")
end

-- Inside a kernel body: the arrays as references to the struct's members (dynamic) or as
-- static declarations, every one but those named in `skip` (a set: arrays declared
-- elsewhere, such as stage_tasks.tpl's copy table).
function M.body_declarations(layout, name, dynamic, skip, indent)
  local out = {}
  if dynamic then
    out[1] = indent .. "/* the block's arrays in dynamic shared memory (above 48 KB: docs/design-dynamic-shared.md) */"
    out[2] = string.format("%s%s &shared = *reinterpret_cast<%s *>(sf_dynamic_smem);", indent, name, name)
  end
  for _, a in ipairs(layout.arrays) do
    if not skip[a.name] then
      if dynamic then
        out[#out + 1] = string.format("%s%s (&%s)%s = shared.%s;", indent, a.type, a.name, a.dims, a.name)
      else
        out[#out + 1] = string.format("%s__shared__ __align__(16) %s %s%s; /* %s */", indent, a.type, a.name, a.dims, a.what)
      end
    end
  end
  return table.concat(out, "\n")
end

return M
