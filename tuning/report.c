/* report.c: draws the tuning report's plot with the hand-written PNG writer. */
#include "tuning/report.h"

#include <math.h>
#include <stdio.h>

#include "runtime/error.h"
#include "tuning/png.h"

enum { LEFT = 44, RIGHT = 12, TOP = 34, BOTTOM = 30, PLOT_H = 240, COLUMN = 22, FAIL_BAND = 14 };

#define BACKGROUND 0xffffffu
#define AXIS 0x404040u
#define GRID 0xe0e0e0u
#define CANDIDATE 0x808080u
#define DEFAULT_COLOR 0xff8c00u
#define WINNER 0x1a9850u
#define FAILED 0xd73027u
#define MAX_RATIO 4.0

/* The y of a time ratio (>= 1): log scale, 1x at the bottom, MAX_RATIO at the top. */
static int y_of(double ratio) {
  if (!(ratio >= 1)) ratio = 1;
  if (ratio > MAX_RATIO) ratio = MAX_RATIO;
  return TOP + FAIL_BAND + (int)lround(PLOT_H * (1 - log2(ratio) / log2(MAX_RATIO)));
}

static void dot(sf_image *img, int x, int y, int radius, uint32_t color) {
  sf_image_fill(img, x - radius, y - radius, x + radius, y + radius, color);
}

sf_status sf_tune_plot(const sf_tune_entry *const *entries, int count, const char *path) {
  int width = LEFT + RIGHT + COLUMN * (count > 0 ? count : 1);
  if (width < 340) width = 340; /* room for the title */
  const int height = TOP + FAIL_BAND + PLOT_H + BOTTOM;
  sf_image img;
  sf_status st = sf_image_create(&img, width, height, BACKGROUND);
  if (st != SF_OK) return st;
  sf_image_text(&img, 4, 4, "candidate time / winner time, per entry", 2, AXIS);
  sf_image_text(&img, 4, 18, "grey candidates  orange default  green winner  red failed", 1, AXIS);
  static const double ticks[] = {1, 1.25, 1.5, 2, 3, 4};
  for (size_t i = 0; i < sizeof ticks / sizeof ticks[0]; i++) {
    char label[16];
    snprintf(label, sizeof label, "%gx", ticks[i]);
    const int y = y_of(ticks[i]);
    sf_image_line(&img, LEFT, y, width - RIGHT, y, GRID);
    sf_image_text(&img, 4, y - 2, label, 1, AXIS);
  }
  sf_image_text(&img, 4, TOP + 2, "fail", 1, FAILED);
  sf_image_line(&img, LEFT, TOP, LEFT, TOP + FAIL_BAND + PLOT_H, AXIS);
  sf_image_line(&img, LEFT, TOP + FAIL_BAND + PLOT_H, width - RIGHT, TOP + FAIL_BAND + PLOT_H, AXIS);
  for (int e = 0; e < count; e++) {
    const sf_tune_entry *entry = entries[e];
    const int x = LEFT + COLUMN * e + COLUMN / 2;
    char number[16];
    snprintf(number, sizeof number, "%d", e + 1);
    sf_image_text(&img, x - 4, TOP + FAIL_BAND + PLOT_H + 6, number, 1, AXIS);
    if (!(entry->winner_us > 0)) continue;
    for (int c = 0; c < entry->candidate_count; c++) {
      const sf_tune_candidate *cand = &entry->candidates[c];
      const int jitter = (c % 5) * 2 - 4; /* spreads equal times sideways */
      if (!cand->ok)
        sf_image_text(&img, x + jitter - 1, TOP + 4, "x", 1, FAILED);
      else
        dot(&img, x + jitter, y_of(cand->median_us / entry->winner_us), 1, CANDIDATE);
    }
    if (entry->default_us > 0) dot(&img, x - 3, y_of(entry->default_us / entry->winner_us), 2, DEFAULT_COLOR);
    dot(&img, x + 3, y_of(1), 2, WINNER);
  }
  st = sf_png_write(&img, path);
  sf_image_free(&img);
  return st;
}
