// HSUM8 leaves the sum of the eight float lanes of Y in lane 0 of X (the
// same register); T is scratch.
#define HSUM8(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS       T, X, X  \
	VPERMILPS    $0x4e, X, T \
	VADDPS       T, X, X  \
	VPERMILPS    $0xb1, X, T \
	VADDPS       T, X, X
