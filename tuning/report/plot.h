/* plot.h: the tuning report's plot (cairo): every candidate's time against its entry's winner.
 * Built into the CLI, not into the library, so that the library does not link cairo. */
#ifndef SCANFORGE_TUNING_REPORT_PLOT_H
#define SCANFORGE_TUNING_REPORT_PLOT_H

#include <stddef.h>

#include "scanforge/scanforge.h"
#include "runtime/launch_config/tuning_database.h"

/* An entry's label under its column: op, dtype, N, the shape (batch x dim x L, then "gG"
 * for G > 1 groups) and the flags the report's table shows (z: gate, Bf: fixed B,
 * d: deterministic), e.g. "fwd bf16 N16 64x160x196 z", "bwd fp32 N8 2x64x1024 g4 zd". */
void sf_tune_plot_label(const sf_tune_entry *entry, char *buf, size_t cap);

/* The plot's size in pixels (points in an SVG): one column per entry, the labels' band
 * as deep as the longest label. */
void sf_tune_plot_size(const sf_tune_entry *const *entries, int count, int *width, int *height);

/* Draws one column per entry, labelled by sf_tune_plot_label: each measured candidate as
 * a grey dot at its median over the winner's on a log scale from 1x (the top of the
 * scale covers the slowest candidate, 2x to 16x; slower ones are triangles on the top
 * edge), the winner green at 1x, the heuristics' pick as an orange diamond, failed
 * candidates as red crosses above the scale; with axes and a legend. Writes an SVG when
 * `path` ends in ".svg", else a PNG. SF_EIO names the file when it cannot be written. */
sf_status sf_tune_plot(const sf_tune_entry *const *entries, int count, const char *path);

#endif
