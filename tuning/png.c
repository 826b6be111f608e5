/* png.c: a tiny raster canvas and a hand-written PNG encoder (stored deflate blocks, CRC-32, Adler-32). */
#include "tuning/png.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/error.h"

/* ---- the canvas -------------------------------------------------------------------------- */

sf_status sf_image_create(sf_image *img, int width, int height, uint32_t background) {
  memset(img, 0, sizeof *img);
  if (width < 1 || height < 1 || width > 16384 || height > 16384)
    return sf_fail(SF_EINVAL, "image size %dx%d: expected 1..16384 on each side", width, height);
  img->rgb = malloc((size_t)width * height * 3);
  if (!img->rgb) return sf_fail(SF_ENOMEM, "image: out of memory");
  img->width = width;
  img->height = height;
  sf_image_fill(img, 0, 0, width - 1, height - 1, background);
  return SF_OK;
}

void sf_image_free(sf_image *img) {
  free(img->rgb);
  memset(img, 0, sizeof *img);
}

void sf_image_set(sf_image *img, int x, int y, uint32_t color) {
  if (x < 0 || y < 0 || x >= img->width || y >= img->height) return;
  uint8_t *p = img->rgb + ((size_t)y * img->width + x) * 3;
  p[0] = (uint8_t)(color >> 16);
  p[1] = (uint8_t)(color >> 8);
  p[2] = (uint8_t)color;
}

void sf_image_fill(sf_image *img, int x0, int y0, int x1, int y1, uint32_t color) {
  for (int y = y0; y <= y1; y++)
    for (int x = x0; x <= x1; x++) sf_image_set(img, x, y, color);
}

void sf_image_line(sf_image *img, int x0, int y0, int x1, int y1, uint32_t color) {
  /* Bresenham: every step moves one pixel along the longer axis. */
  int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
  for (;;) {
    sf_image_set(img, x0, y0, color);
    if (x0 == x1 && y0 == y1) break;
    int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

/* 3x5 glyphs: five rows of three bits, the high bit on the left. */
static const struct glyph {
  char c;
  uint8_t rows[5];
} glyphs[] = {
    {'0', {7, 5, 5, 5, 7}}, {'1', {2, 6, 2, 2, 7}}, {'2', {7, 1, 7, 4, 7}}, {'3', {7, 1, 7, 1, 7}},
    {'4', {5, 5, 7, 1, 1}}, {'5', {7, 4, 7, 1, 7}}, {'6', {7, 4, 7, 5, 7}}, {'7', {7, 1, 1, 2, 2}},
    {'8', {7, 5, 7, 5, 7}}, {'9', {7, 5, 7, 1, 7}}, {'.', {0, 0, 0, 0, 2}}, {'x', {0, 5, 2, 5, 0}},
    {'-', {0, 0, 7, 0, 0}}, {'%', {5, 1, 2, 4, 5}}, {'/', {1, 1, 2, 4, 4}}, {':', {0, 2, 0, 2, 0}},
    {'<', {1, 2, 4, 2, 1}}, {'>', {4, 2, 1, 2, 4}}, {'A', {2, 5, 7, 5, 5}}, {'B', {6, 5, 6, 5, 6}},
    {'C', {3, 4, 4, 4, 3}}, {'D', {6, 5, 5, 5, 6}}, {'E', {7, 4, 6, 4, 7}}, {'F', {7, 4, 6, 4, 4}},
    {'G', {3, 4, 5, 5, 3}}, {'H', {5, 5, 7, 5, 5}}, {'I', {7, 2, 2, 2, 7}}, {'J', {1, 1, 1, 5, 2}},
    {'K', {5, 5, 6, 5, 5}}, {'L', {4, 4, 4, 4, 7}}, {'M', {5, 7, 7, 5, 5}}, {'N', {6, 5, 5, 5, 5}},
    {'O', {2, 5, 5, 5, 2}}, {'P', {6, 5, 6, 4, 4}}, {'Q', {2, 5, 5, 6, 3}}, {'R', {6, 5, 6, 5, 5}},
    {'S', {3, 4, 2, 1, 6}}, {'T', {7, 2, 2, 2, 2}}, {'U', {5, 5, 5, 5, 7}}, {'V', {5, 5, 5, 5, 2}},
    {'W', {5, 5, 7, 7, 5}}, {'X', {5, 5, 2, 5, 5}}, {'Y', {5, 5, 2, 2, 2}}, {'Z', {7, 1, 2, 4, 7}},
};

static const struct glyph *glyph_of(char c) {
  /* 'x' is the "times" sign of "1.5x"; other lower-case letters are drawn upper case. */
  if (c != 'x') c = (char)toupper((unsigned char)c);
  for (size_t i = 0; i < sizeof glyphs / sizeof glyphs[0]; i++)
    if (glyphs[i].c == c) return &glyphs[i];
  return NULL;
}

int sf_image_text(sf_image *img, int x, int y, const char *text, int scale, uint32_t color) {
  int at = x;
  for (const char *p = text; *p; p++, at += 4 * scale) {
    const struct glyph *g = glyph_of(*p);
    if (!g) continue;
    for (int row = 0; row < 5; row++)
      for (int col = 0; col < 3; col++)
        if (g->rows[row] & (4 >> col))
          sf_image_fill(img, at + col * scale, y + row * scale, at + col * scale + scale - 1,
                        y + row * scale + scale - 1, color);
  }
  return at - x;
}

/* ---- checksums ---------------------------------------------------------------------------- */

uint32_t sf_crc32(uint32_t crc, const uint8_t *data, size_t n) {
  /* Bitwise, reflected polynomial 0xEDB88320: slow but small, and images are small. */
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= data[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

uint32_t sf_adler32(uint32_t adler, const uint8_t *data, size_t n) {
  uint32_t a = adler & 0xffff, b = adler >> 16;
  for (size_t i = 0; i < n; i++) {
    a = (a + data[i]) % 65521;
    b = (b + a) % 65521;
  }
  return b << 16 | a;
}

/* ---- PNG ------------------------------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Writes one chunk: length, type, data, CRC over type and data. */
static int write_chunk(FILE *f, const char type[4], const uint8_t *data, size_t n) {
  uint8_t head[8], tail[4];
  put32(head, (uint32_t)n);
  memcpy(head + 4, type, 4);
  uint32_t crc = sf_crc32(sf_crc32(0, (const uint8_t *)type, 4), data, n);
  put32(tail, crc);
  return fwrite(head, 1, 8, f) == 8 && (n == 0 || fwrite(data, 1, n, f) == n) && fwrite(tail, 1, 4, f) == 4;
}

sf_status sf_png_write(const sf_image *img, const char *path) {
  /* The filtered scanlines: a 0 (no filter) before each row. */
  const size_t row = (size_t)img->width * 3 + 1, raw_size = row * img->height;
  uint8_t *raw = malloc(raw_size);
  /* zlib: 2 header bytes, 5 bytes per stored block of at most 65535, Adler-32. */
  const size_t blocks = raw_size / 65535 + 1, z_size = 2 + raw_size + 5 * blocks + 4;
  uint8_t *z = malloc(z_size);
  if (!raw || !z) {
    free(raw);
    free(z);
    return sf_fail(SF_ENOMEM, "PNG: out of memory");
  }
  for (int y = 0; y < img->height; y++) {
    raw[row * y] = 0;
    memcpy(raw + row * y + 1, img->rgb + (size_t)y * img->width * 3, (size_t)img->width * 3);
  }
  size_t at = 0;
  z[at++] = 0x78; /* deflate, 32 KiB window */
  z[at++] = 0x01; /* no preset dictionary, fastest; (0x78 << 8 | 0x01) % 31 == 0 */
  for (size_t done = 0; done < raw_size || done == 0;) {
    size_t n = raw_size - done < 65535 ? raw_size - done : 65535;
    const int final = done + n == raw_size;
    z[at++] = (uint8_t)final; /* BFINAL, BTYPE 00: stored */
    z[at++] = (uint8_t)n, z[at++] = (uint8_t)(n >> 8);
    z[at++] = (uint8_t)~n, z[at++] = (uint8_t)(~n >> 8);
    memcpy(z + at, raw + done, n);
    at += n;
    done += n;
    if (final) break;
  }
  put32(z + at, sf_adler32(1, raw, raw_size));
  at += 4;

  static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  uint8_t ihdr[13];
  put32(ihdr, (uint32_t)img->width);
  put32(ihdr + 4, (uint32_t)img->height);
  ihdr[8] = 8;  /* bits per sample */
  ihdr[9] = 2;  /* truecolour */
  ihdr[10] = 0; /* deflate */
  ihdr[11] = 0; /* adaptive filtering */
  ihdr[12] = 0; /* not interlaced */
  sf_status st = SF_OK;
  FILE *f = fopen(path, "wb");
  if (!f) {
    st = sf_fail(SF_EIO, "cannot write %s: %s", path, strerror(errno));
  } else {
    int ok = fwrite(signature, 1, 8, f) == 8 && write_chunk(f, "IHDR", ihdr, sizeof ihdr) &&
             write_chunk(f, "IDAT", z, at) && write_chunk(f, "IEND", NULL, 0);
    if (fclose(f) != 0) ok = 0;
    if (!ok) st = sf_fail(SF_EIO, "cannot write %s: %s", path, strerror(errno));
  }
  free(raw);
  free(z);
  return st;
}
