/* zlib: raw deflate (inflateInit2 with negative window bits) and crc32 for .ipa archives. */
#include <zlib.h>
