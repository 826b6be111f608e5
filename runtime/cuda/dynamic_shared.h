/* dynamic_shared.h: how a generated module says how much dynamic shared memory its launches
 * pass (docs/design-dynamic-shared.md). A template whose arrays exceed 48 KB keeps them in
 * dynamic shared memory and defines the device global
 *   extern "C" { __device__ unsigned char sf_dynamic_shared_16[BYTES / 16]; }
 * whose size is the figure: the loader reads it with cuModuleGetGlobal, which copies nothing. */
#ifndef SCANFORGE_DYNAMIC_SHARED_H
#define SCANFORGE_DYNAMIC_SHARED_H

#define SF_DYNAMIC_SHARED_SYMBOL "sf_dynamic_shared_16"
#define SF_DYNAMIC_SHARED_UNIT 16 /* bytes of shared memory per byte of the symbol */

/* The dynamic shared memory a generated source declares, in bytes (0 when it declares
 * none, or the declaration is malformed). */
int sf_source_dynamic_shared(const char *source);

#endif
