// dtypes.h: TensorFlow's activation dtypes as scanforge's sf_dtype.
#ifndef SCANFORGE_TF_DTYPES_H
#define SCANFORGE_TF_DTYPES_H

#include "scanforge/scanforge.h"
#include "tensorflow/core/framework/types.pb.h"

namespace scanforge_tf {

// The ops' type attrs allow exactly these three, so any other value is a bug upstream.
inline sf_dtype ToSfDtype(tensorflow::DataType type) {
  switch (type) {
    case tensorflow::DT_HALF: return SF_FP16;
    case tensorflow::DT_BFLOAT16: return SF_BF16;
    default: return SF_FP32;
  }
}

}  // namespace scanforge_tf

#endif
