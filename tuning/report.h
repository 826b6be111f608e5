/* report.h: the tuning report's plot: every candidate's time against its entry's winner. */
#ifndef SCANFORGE_TUNING_REPORT_H
#define SCANFORGE_TUNING_REPORT_H

#include "scanforge/scanforge.h"
#include "tuning/database.h"

/* Writes a PNG with one column per entry (numbered from 1, as the report's table): each
 * measured candidate as a grey dot at its median over the winner's, on a log scale from
 * 1x to 4x (slower ones on the top edge), the heuristics' choice in orange, the winner in
 * green at 1x, candidates that failed as red marks above the scale. */
sf_status sf_tune_plot(const sf_tune_entry *const *entries, int count, const char *path);

#endif
