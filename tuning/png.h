/* png.h: a small RGB canvas (points, lines, a 3x5 digit font) and a PNG writer with stored deflate blocks. */
#ifndef SCANFORGE_TUNING_PNG_H
#define SCANFORGE_TUNING_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "scanforge/scanforge.h"

typedef struct sf_image {
  int width, height;
  uint8_t *rgb; /* width * height * 3 bytes, rows top to bottom */
} sf_image;

/* A canvas filled with `background` (0xRRGGBB). SF_ENOMEM, or SF_EINVAL for a size
 * outside 1..16384. */
sf_status sf_image_create(sf_image *img, int width, int height, uint32_t background);
void sf_image_free(sf_image *img);

/* Drawing clips to the canvas. */
void sf_image_set(sf_image *img, int x, int y, uint32_t color);
void sf_image_fill(sf_image *img, int x0, int y0, int x1, int y1, uint32_t color); /* inclusive */
void sf_image_line(sf_image *img, int x0, int y0, int x1, int y1, uint32_t color);
/* Text in a 3x5 pixel font, each pixel drawn as scale x scale; knows the digits and
 * ". x - % / : < >" and the letters A..Z (lower case is drawn as upper case); other
 * characters leave a blank. Returns the width drawn. */
int sf_image_text(sf_image *img, int x, int y, const char *text, int scale, uint32_t color);

/* CRC-32 (ISO 3309, as PNG uses) and Adler-32 (zlib) of `n` bytes, continuing from a
 * previous value (start with 0 and 1). */
uint32_t sf_crc32(uint32_t crc, const uint8_t *data, size_t n);
uint32_t sf_adler32(uint32_t adler, const uint8_t *data, size_t n);

/* Writes the image as an 8-bit RGB PNG: IHDR, one IDAT holding a zlib stream of stored
 * (uncompressed) blocks, IEND. SF_EIO names the file when it cannot be written. */
sf_status sf_png_write(const sf_image *img, const char *path);

#endif
