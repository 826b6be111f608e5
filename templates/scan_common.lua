-- scan_common.lua: Lua helpers shared by the scan templates (import("scan_common")).
local M = {}

-- Bytes per element of the activation type.
function M.element_size(dtype)
  if dtype == "fp32" then return 4 end
  return 2
end

-- The widest access (16, 8, 4 or 2 bytes) that tiles `items` elements of `size` bytes.
function M.vector_bytes(items, size)
  local bytes = 16
  while bytes > size and (items * size) % bytes ~= 0 do bytes = bytes // 2 end
  return bytes
end

-- The CUDA type that moves `bytes` bytes at once, and its 32-bit words (nil for 2 bytes).
function M.vector_type(bytes)
  if bytes == 16 then return "uint4", { "x", "y", "z", "w" } end
  if bytes == 8 then return "uint2", { "x", "y" } end
  if bytes == 4 then return "unsigned int", { "" } end
  return "unsigned short", nil
end

function M.is_power_of_two(x)
  return x > 0 and (x & (x - 1)) == 0
end

-- log2 of a power of two.
function M.log2(x)
  local n = 0
  while x > 1 do x = x // 2; n = n + 1 end
  return n
end

-- The most 4-byte words that fall in one shared-memory bank when threads first to last
-- each access `words` consecutive words from word_of(t).
local function most_in_one_bank(first, last, words, word_of)
  local per_bank, worst = {}, 0
  for t = first, last do
    for w = 0, words - 1 do
      local bank = (word_of(t) + w) % 32
      per_bank[bank] = (per_bank[bank] or 0) + 1
      if per_bank[bank] > worst then worst = per_bank[bank] end
    end
  end
  return worst
end

-- Shared-memory strides for an array that a warp's threads (lane t % lanes, slot
-- t // lanes) write at word lane * lane_rows * inner + slot * slot_words, where inner is
-- a row of `row` words padded to `inner` and slot_words >= rows_per_slot * inner: the
-- smallest paddings (row to inner, then slot_words), both multiples of `align` words
-- (default 1), that spread the 32 writes over the most banks.
function M.spread_strides(lanes, lane_rows, rows_per_slot, row, align)
  align = align or 1
  local best
  for row_pad = 0, 7, align do
    local inner = row + row_pad
    for slot_pad = 0, 31, align do
      local slot_words = rows_per_slot * inner + slot_pad
      local worst = most_in_one_bank(0, 31, 1, function(t) return (t % lanes) * lane_rows * inner + (t // lanes) * slot_words end)
      if not best or worst < best.worst then
        best = { worst = worst, inner = inner, slot_words = slot_words }
      end
      if worst == 1 then return best.inner, best.slot_words end
    end
  end
  return best.inner, best.slot_words
end

-- Strides for per-lane rows of `row` floats that each thread writes 16 bytes at a time
-- (lane t % lanes, slot t // lanes; row = lane's, rows_per_slot rows a slot) and reads back
-- one float each: lane l of a slot first reads row l % team at column (l // team) * step
-- (team = 1: every lane reads row 0, its lanes `step` floats apart). Both padded to whole
-- 16-byte runs, chosen to spread both patterns over the banks. A 16-byte access serves 8
-- threads a pass, each over 4 banks; a pass's cost is its most-used bank.
function M.vector_row_strides(lanes, rows_per_slot, row, step, team)
  team = team or 1
  local function write_cost(inner, slot_words) -- 16-byte accesses: 4 passes of 8 threads
    local cost = 0
    for phase = 0, 3 do
      cost = cost + most_in_one_bank(phase * 8, phase * 8 + 7, 4, function(t) return (t % lanes) * inner + (t // lanes) * slot_words end)
    end
    return cost
  end
  local function read_cost(inner, slot_words)
    return most_in_one_bank(0, 31, 1, function(t)
      local l = t % lanes
      return (l % team) * inner + (l // team) * step + (t // lanes) * slot_words
    end)
  end
  local best
  for row_pad = 0, 12, 4 do
    local inner = (row + 3) // 4 * 4 + row_pad
    for slot_pad = 0, 28, 4 do
      local slot_words = rows_per_slot * inner + slot_pad
      local cost = write_cost(inner, slot_words) + 4 * read_cost(inner, slot_words)
      if not best or cost < best.cost then best = { cost = cost, inner = inner, slot_words = slot_words } end
    end
  end
  return best.inner, best.slot_words
end

-- C statements that widen `rows` staged 16-bit rows of `items` steps into fp32 rows, four
-- steps per thread and pass, by the `block` threads of a block, for each matrix of
-- `list` ({ from = array of rows, to = array of rows, when = a C condition or nil }).
-- Every load is issued before the first store: the stores go to other shared arrays, and
-- loads after them would each wait out a load's latency alone. The passes are unrolled,
-- so no division or loop test is left but the last pass's bound. The rows of both arrays
-- must start 16-byte aligned (rows of 4k floats).
function M.widen_rows(list, rows, items, block, indent)
  local quads, per_row = rows * items // 4, items // 4
  local loads, stores = {}, {}
  for k, m in ipairs(list) do
    for pass = 0, (quads + block - 1) // block - 1 do
      local w = string.format("(int)threadIdx.x + %d", pass * block)
      local guard = (pass + 1) * block > quads and string.format("threadIdx.x < %d", quads - pass * block) or nil
      if m.when then guard = guard and (guard .. " && (" .. m.when .. ")") or m.when end
      local name = string.format("w%d_%d", k, pass)
      local at = string.format("[(%s) / %d][4 * ((%s) %% %d)]", w, per_row, w, per_row)
      if guard then
        loads[#loads + 1] = string.format("%suint2 %s = make_uint2(0u, 0u);", indent, name)
        loads[#loads + 1] = string.format("%sif (%s) %s = load4_16(&%s%s);", indent, guard, name, m.from, at)
        stores[#stores + 1] = string.format("%sif (%s) store4_f32(%s, &%s%s);", indent, guard, name, m.to, at)
      else
        loads[#loads + 1] = string.format("%sconst uint2 %s = load4_16(&%s%s);", indent, name, m.from, at)
        stores[#stores + 1] = string.format("%sstore4_f32(%s, &%s%s);", indent, name, m.to, at)
      end
    end
  end
  return table.concat(loads, "\n") .. "\n" .. table.concat(stores, "\n")
end

return M
