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

-- Whether every phase of a warp's access is served in one wavefront: each thread t reads
-- or writes `words` words from word_of(t), a phase is 32 / words threads, and a phase
-- with two distinct words in one bank takes two. Phases with a thread that `known`
-- rejects are left out (slots not placed yet).
local function phases_conflict_free(words, word_of, known)
  local per_phase = 32 // words
  for first = 0, 31, per_phase do
    local whole = true
    for t = first, first + per_phase - 1 do
      if known and not known(t) then whole = false break end
    end
    if whole then
      local bank_word = {}
      for t = first, first + per_phase - 1 do
        local a = word_of(t)
        for w = 0, words - 1 do
          local b = (a + w) % 32
          if bank_word[b] and bank_word[b] ~= a + w then return false end
          bank_word[b] = a + w
        end
      end
    end
  end
  return true
end

-- The layout of per-lane rows that a slot's `lanes` threads (lane t % lanes, slot
-- t // lanes) write `row` words each, 16 bytes at a time, and read back: with team = 1,
-- lane l reads `step` consecutive words of every row from column l * step, in pieces of up
-- to 16 bytes; with a team, lane l reads one word of row l % team + m * team at column
-- l // team. Rows are `inner` words apart; a slot's rows start at word
-- (slot // group) * group_words + offsets[slot % group + 1].
--
-- The hardware serves 128 bytes of a warp's access a wavefront: 8-byte accesses a
-- half-warp at a time, 16-byte ones a quarter, and a bank holding k distinct words of a
-- phase costs k wavefronts. `vector_row_strides` (equal slot strides) counts 4-byte reads
-- over the whole warp instead, so some of its layouts cost an 8-byte read two wavefronts.
-- Where the caller's layout `plain` (equal strides: group 1) does, this finds rows of up
-- to 12 words more and slot offsets (multiples of 4 words, so that the 16-byte accesses
-- stay aligned) that cost none more than the bytes need, with the least memory: equal
-- strides where some serve, else groups of slots. Elsewhere it returns `plain` itself.
function M.part_layout(lanes, row, step, team, plain)
  local read_words = team == 1 and math.min(step, 4) or 1
  -- whether one warp's writes and reads are all served a wavefront a phase (the fewest the
  -- bytes need), slots from `placed` on left out when given
  local function conflict_free(inner, base_of, placed)
    local known = placed and function(t) return t // lanes < placed end
    local slot_base = function(t) return base_of(t // lanes) end
    for c0 = 0, row - 1, 4 do
      if not phases_conflict_free(4, function(t) return slot_base(t) + (t % lanes) * inner + c0 end, known) then return false end
    end
    for m = 0, lanes // team - 1 do
      for i0 = 0, (team == 1 and step or 1) - 1, read_words do
        if not phases_conflict_free(read_words, function(t)
          local l = t % lanes
          if team == 1 then return slot_base(t) + m * inner + l * step + i0 end
          return slot_base(t) + (l % team + m * team) * inner + l // team
        end, known) then return false end
      end
    end
    return true
  end
  if lanes == 1 or conflict_free(plain.inner, function(s) return s * plain.group_words end) then return plain end
  local best -- the layout with the fewest words a slot, then the shortest rows
  local function consider(layout)
    layout.per_slot = layout.group_words / layout.group
    if not best or layout.per_slot < best.per_slot or (layout.per_slot == best.per_slot and layout.inner < best.inner) then
      best = layout
    end
  end
  -- equal strides: rows of up to 12 words more, slots up to 28 words apart more
  for inner = (row + 3) // 4 * 4, (row + 3) // 4 * 4 + 12, 4 do
    for pad = 0, 28, 4 do
      local slot_words = lanes * inner + pad
      if (not best or slot_words < best.per_slot) and conflict_free(inner, function(s) return s * slot_words end) then
        consider({ inner = inner, group = 1, group_words = slot_words, offsets = { 0 } })
      end
    end
  end
  if best then return best end
  -- Else groups of slots at chosen offsets: as many slots as share a read phase
  -- (32 / read_words threads) or a write phase (8), so that no phase spans two groups;
  -- a group's words are a multiple of 32, so every group meets the same banks as the first.
  local group = math.min(32 // lanes, math.max(1, math.max(32 // read_words, 8) // lanes))
  if group == 1 or group > 4 then return plain end -- one slot a group: equal strides, searched above
  for inner = (row + 3) // 4 * 4, (row + 3) // 4 * 4 + 12, 4 do
    local span = lanes * inner
    local offsets = { 0 }
    local function base_of(s) return offsets[s % group + 1] end -- within the first group
    -- slot k's offset: the first word at or after the previous slot's end in residue r
    local function place(k, residue)
      local at = offsets[k] + span
      return at + (residue - at % 32) % 32
    end
    local function search(k) -- offsets[1..k] placed, their phases conflict-free
      -- no layout from here has fewer words a slot than the best so far
      if best and offsets[k] + (group - k + 1) * span >= best.per_slot * group then return end
      if k == group then
        local words = (offsets[group] + span + 31) // 32 * 32
        consider({ inner = inner, group = group, group_words = words, offsets = { table.unpack(offsets) } })
        return
      end
      for residue = 0, 28, 4 do
        offsets[k + 1] = place(k, residue)
        if conflict_free(inner, base_of, k + 1) then search(k + 1) end
      end
      offsets[k + 1] = nil
    end
    search(1)
  end
  return best or plain
end

-- The C expression of the word where slot `slot` (a C expression) starts in a
-- `part_layout`: a product for equal strides, else the group's start plus the slot's
-- offset in its group (offsets are multiples of 4 words: 16-byte accesses stay aligned).
function M.part_base(layout, slot)
  if layout.group == 1 then return string.format("%s * %d", slot, layout.group_words) end
  local cases = {}
  for k = #layout.offsets, 2, -1 do
    cases[#cases + 1] = string.format("k == %d ? %d : ", k - 1, layout.offsets[k] // 4)
  end
  return string.format("[&] { const int k = %s %% %d; return 4 * ((%s / %d) * %d + (%s0)); }()", slot, layout.group,
                       slot, layout.group, layout.group_words // 4, table.concat(cases))
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
