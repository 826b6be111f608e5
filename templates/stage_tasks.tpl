@ -- stage_tasks.tpl: inside a kernel, the table of this thread's copies that fill one
@ -- stage (a time block of `stage.items` steps of every row in `stage.rows`), and
@ -- `fetch(t0, which, all)`, which issues them for the block at t0 into stages[which].
@ -- The including template sets the Lua global `stage` = { rows = { {name, count, base}
@ -- ... }, items, padded (row length in the stage), block (threads), copy_bytes }, where
@ -- `base` is the C expression of row i's first element. Rows marked `early = true` come
@ -- first; a fetch with all = false copies only those. The enclosing kernel body has a
@ -- template parameter WORDS (stage_copy.tpl's copy_chunk).
@ -- With `stage.shared_tasks` (a C expression) the source table is that array, in the
@ -- kernel's dynamic shared memory, instead of a __shared__ one of its own.
@ -- The table is built once: the same rows and columns serve every time block, and only
@ -- t0 moves. With `stage.fast_fetch` (a C condition: the kernels that take it), a block
@ -- wholly inside the sequence whose copies are all aligned skips the per-copy checks
@ -- (docs/design-fast-fetch.md). With `stage.first_fetch` = { t0 = C expression, all = C
@ -- condition, kernels = C condition }, the kernels it names issue the copies of the first
@ -- block (into stages[0]) as the table is built, each as soon as its source is known: the
@ -- block's first memory round trip overlaps the rest of the build. `first_fetched` says
@ -- whether the kernel did; if not, it calls `fetch(t0, 0, all)` after the table as before
@ -- (docs/design-first-fetch.md).
@ local common = import("scan_common")
@ local EPC = stage.copy_bytes // common.element_size(variant.dtype)
@ local CHUNKS = stage.items // EPC
@ local total_rows, early_rows = 0, 0
@ for _, r in ipairs(stage.rows) do
@   total_rows = total_rows + r.count
@   if r.early then early_rows = total_rows end
@ end
@ local TASKS = total_rows * CHUNKS
@ local PER_THREAD = (TASKS + stage.block - 1) // stage.block
  /* Per copy: the source (at its column), and the rest packed in an int (stage offset
   * << 9 | early << 8 | column << 1 | aligned); -1 when the thread has no task. */
@ if stage.shared_tasks then
  const elem_t *(&task_src)[$(PER_THREAD)][$(stage.block)] = $(stage.shared_tasks);
@ else
  __shared__ const elem_t *task_src[$(PER_THREAD)][$(stage.block)];
@ end
  int task_meta[$(PER_THREAD)];
@ if stage.fast_fetch then
  bool all_aligned = true; /* every copy of mine starts on a $(stage.copy_bytes)-byte boundary */
@ end
@ if stage.first_fetch then
  constexpr bool first_fetched = $(stage.first_fetch.kernels); /* the first block's copies issued below */
@ end
#pragma unroll
  for (int k = 0; k < $(PER_THREAD); k++) {
    const int task = threadIdx.x + k * $(stage.block);
    const int row = min(task, $(TASKS - 1)) / $(CHUNKS), c = task % $(CHUNKS);
    const elem_t *base;
    int dst_row;
@ local first = 0
@ for idx, r in ipairs(stage.rows) do
    $(idx == 1 and "if" or "else if") (row < $(first + r.count)) {
      const int i = row - $(first);
      base = $(r.base);
      dst_row = $(first * stage.padded) + i * $(stage.padded); /* stage_t.$(r.name) */
    }
@   first = first + r.count
@ end
    else { base = 0; dst_row = 0; } /* unreachable */
    task_src[k][threadIdx.x] = base + c * $(EPC);
    task_meta[k] = task < $(TASKS) ? ((dst_row + c * $(EPC)) << 9 | (row < $(early_rows)) << 8 |
                                      (c * $(EPC)) << 1 | (((unsigned long long)base & $(stage.copy_bytes - 1)) == 0))
                                   : -1;
@ if stage.fast_fetch then
    if (task < $(TASKS)) all_aligned = all_aligned && (task_meta[k] & 1);
@ end
@ if stage.first_fetch then
    if (first_fetched && task < $(TASKS) && ($(stage.first_fetch.all) || row < $(early_rows))) {
      const int first_t0 = $(stage.first_fetch.t0);
      copy_chunk<WORDS>(reinterpret_cast<elem_t *>(&stages[0]) + dst_row + c * $(EPC), base + c * $(EPC) + first_t0,
                        L - first_t0 - c * $(EPC), ((unsigned long long)base & $(stage.copy_bytes - 1)) == 0);
    }
@ end
  }
@ -- My copies into `to`, each checked against the sequence's end and its row's alignment,
@ -- those whose task meets `condition` (C, of k and meta): the one loop of both fetches.
@ local function checked_copies(condition)
@   return table.concat({
@     "#pragma unroll",
@     "    for (int k = 0; k < " .. PER_THREAD .. "; k++) {",
@     "      const int meta = task_meta[k];",
@     "      if (meta >= 0 && " .. condition .. ")",
@     "        copy_chunk<WORDS>(to + (meta >> 9), task_src[k][threadIdx.x] + t0, L - t0 - ((meta >> 1) & 127), meta & 1);",
@     "    }" }, "\n")
@ end
  auto fetch = [&](int t0, int which, bool all) {
    elem_t *to = reinterpret_cast<elem_t *>(&stages[which]);
@ if stage.fast_fetch then
#if __CUDA_ARCH__ >= 800
    /* A block wholly in the sequence, and copies all aligned: each copy is one cp.async,
     * without copy_chunk's checks (about 20 instructions a copy down to 9-13). */
    if (($(stage.fast_fetch)) && all_aligned && t0 + $(stage.items) <= L) {
#pragma unroll
      for (int k = 0; k < $(PER_THREAD); k++) {
        const int meta = task_meta[k];
        if (((k + 1) * $(stage.block) <= $(TASKS) || meta >= 0) && (all || (meta & 256)))
          copy_async(to + (meta >> 9), task_src[k][threadIdx.x] + t0);
      }
      return;
    }
#endif
@ end
$(checked_copies("(all || (meta & 256))"))
  };
@ if stage.state_rows then
  /* Every row but the first $(stage.state_rows), which feed only the state: for a pass that
   * does not carry one (the backward's carry pass with segments of whole intervals). */
  auto fetch_without_state_rows = [&](int t0, int which) {
    elem_t *to = reinterpret_cast<elem_t *>(&stages[which]);
$(checked_copies("threadIdx.x + k * " .. stage.block .. " >= " .. stage.state_rows * CHUNKS))
  };
@ end
