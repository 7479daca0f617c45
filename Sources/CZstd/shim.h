/* The literal-compression switch (ZSTD_c_literalCompressionMode) is in zstd's experimental
 * section: a parameter of the stable ZSTD_CCtx_setParameter, understood by the shared
 * library since 1.4.5. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
