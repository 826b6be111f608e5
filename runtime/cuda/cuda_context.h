/* cuda_context.h: the CUDA context scanforge works in: the device's primary context. */
#ifndef SCANFORGE_CUDA_CONTEXT_H
#define SCANFORGE_CUDA_CONTEXT_H

#include <cuda.h>

#include "scanforge/scanforge.h"

/* Devices whose primary context scanforge keeps; a higher ordinal is SF_EUNSUPPORTED. */
#define SF_MAX_DEVICES 64

/* The primary context of device `ordinal` (the one TensorFlow and the runtime API use),
 * retained on first use and kept for the life of the process: modules loaded into it
 * must not outlive it. Does not change the calling thread's current context. */
sf_status sf_cu_primary_context(int ordinal, CUcontext *context);

/* The calling thread's current context; when none is current, the primary context of
 * device `ordinal` is made current and returned. */
sf_status sf_cu_current_context(int ordinal, CUcontext *context);

#endif
