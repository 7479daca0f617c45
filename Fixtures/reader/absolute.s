// Linked into libbase: an exported absolute symbol, whose value is not an address in
// the image (EXPORT_SYMBOL_FLAGS_KIND_ABSOLUTE). The same source assembles for both
// architectures.
	.globl	_base_absolute
_base_absolute = 0x4d41474943
